// The `--since OLD` stage: which loaded files are new or changed since OLD.
// OLD's files go to one sorter, the loaded files to another, as FileKeys.
// FileKeys are in identity.h.
// A merge join by (filesystem UUID + subvolume, inode) follows.
// It marks every file found unchanged in OLD.
// Memory: the two sorters' budget; nothing grows with OLD beyond it.
// Used by the load stage (load.h); single-threaded.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/plan/identity.h"

namespace oans {

class SinceJoin {
 public:
  // `stop` (may be null): once set, LoadOld and MarkUnchanged return kInterrupted.
  SinceJoin(const std::string& temp_dir, uint64_t memory_budget, const std::atomic<bool>* stop = nullptr)
      : old_(temp_dir, memory_budget / 2), new_(temp_dir, memory_budget / 2), stop_(stop) {}
  // Reads OLD (a truncated one too: its missing files count as new); `*truncated` says
  // whether it was.
  Status LoadOld(const std::string& path, FilesystemIds* ids, bool* truncated);
  // A loaded file: its filesystem id, inode, file id and identity.
  Status AddNew(uint32_t fs, uint64_t ino, uint32_t id, const FileIdentity& identity) {
    return new_.Add({fs, 0, ino, id, 0, identity});
  }
  // Sets changed[id] to false for every file unchanged since OLD.
  Status MarkUnchanged(std::vector<bool>* changed);

 private:
  Status CheckStop() const;
  ExternalSorter<FileKey, FileKeyLess> old_, new_;
  const std::atomic<bool>* stop_;
};

}  // namespace oans
