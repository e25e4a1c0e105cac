// The filesystems a scan meets, identified once per st_dev, and on btrfs the inodes
// whose metadata changed since the previous index's generation. One Filesystems lives
// in RunScan for the whole scan and owns its records; every public member takes its own
// lock, so walkers and pipeline readers may call them from any thread at once. It reads
// the PreviousIndex it is given, which must outlive it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/fsinfo.h"
#include "lib/base/observer.h"
#include "lib/base/sys.h"
#include "lib/format/index_file.h"
#include "lib/scan/previous.h"

namespace oans {

// The filesystems met so far, identified once per st_dev through an open file. On btrfs,
// identifying one also records its generation and, when the previous index knew it at
// an older generation, asks which inodes may have changed since (see UnchangedExtents).
class Filesystems {
 public:
  Filesystems(Sys& sys, const std::vector<std::string>& roots, const PreviousIndex& prev, bool use_generations,
              Observer* observer)
      : sys_(sys), roots_(roots), prev_(prev), use_generations_(use_generations), observer_(observer) {}
  // Caller holds no lock; fd is a file on `dev` (or -1: identify by opening `path`).
  uint32_t Of(uint64_t dev, int fd, const std::string& path, uint32_t root);
  // Whether btrfs says inode `ino` of filesystem `i` has had no metadata written since
  // the previous scan's generation: its extent map and flags are then those recorded.
  // The search runs when first asked, in `search_threads` slices of inode numbers.
  bool UnchangedExtents(uint32_t i, uint64_t ino);
  void SetSearchThreads(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    search_threads_ = std::max(1, n);
  }
  // Keys are stable once added; safe to read for an index returned by Of.
  std::string Key(uint32_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return keys_[i];
  }
  std::vector<FsRecord> list() {
    std::lock_guard<std::mutex> lock(mu_);
    return list_;
  }
  std::vector<std::string> devices() {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_;
  }

 private:
  Sys& sys_;
  const std::vector<std::string>& roots_;
  std::mutex mu_;
  struct Changes {
    bool pending = false;  // to be searched: since and path are set
    bool known = false;    // searched: inodes lists every inode that may have changed
    uint64_t since = 0;
    std::string path;      // a file or directory on the subvolume, to search through
    std::vector<uint64_t> inodes;  // sorted
  };
  // The generation is taken when the subvolume is first met, before any of its files is
  // mapped, so the next scan's search covers every change made after this one read.
  Changes Pending(const FsRecord& r, const std::string& path);
  // Slices of inode numbers holding about as many previous records each, searched at
  // once: the search waits on metadata reads, which a fast disk serves in parallel.
  void Search(const FsRecord& r, Changes* c);

  const PreviousIndex& prev_;
  const bool use_generations_;
  Observer* observer_;
  int search_threads_ = 1;
  bool said_read_only_ = false;  // a read-only snapshot was named
  std::map<uint64_t, uint32_t> of_dev_;
  std::vector<FsRecord> list_;
  std::vector<std::string> keys_;
  std::vector<Changes> changes_;
  std::vector<std::string> devices_;
};

}  // namespace oans
