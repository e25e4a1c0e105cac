// Which file is which across indexes.
// A file is (filesystem UUID, btrfs subvolume, inode), never the device number.
// btrfs gives each subvolume an anonymous device number.
// It changes with mount order, so two scans of one tree may differ in `dev`.
// FilesystemIds gives every (UUID, subvolume) met in any index one id.
// A FileKey is a file under that id, with what tells whether it changed.
// FileKeys sort by (filesystem, inode).
// Comparing two indexes' files (`--since`, oans-diff) is thus a merge join.
// It joins two sorted streams (lib/base/stream.h) in bounded memory.
// Single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lib/format/index_file.h"

namespace oans {

class FilesystemIds {
 public:
  // The id of `f`'s (UUID, subvolume); new ones are numbered in the order first met.
  uint32_t Of(const FsRecord& f) { return ids_.emplace(f.Key(), uint32_t(ids_.size())).first->second; }
  // The ids of an index header's filesystems, by their position there.
  std::vector<uint32_t> Of(const std::vector<FsRecord>& filesystems) {
    std::vector<uint32_t> out;
    for (const auto& f : filesystems) out.push_back(Of(f));
    return out;
  }

 private:
  std::map<std::string, uint32_t> ids_;
};

// One file of an index: `fs` from FilesystemIds, `seq` its place in the index (or a file
// id), `at` whatever the reader keeps for it (e.g. where its path is stored).
struct FileKey {
  uint32_t fs = 0;
  uint32_t unused = 0;
  uint64_t ino = 0, seq = 0, at = 0;
  FileIdentity identity;
  std::tuple<uint32_t, uint64_t> inode() const { return {fs, ino}; }
};
// By (filesystem, inode), then by place: of several entries for one inode, the last
// comes last (and wins a MergeJoin, as it does in an index).
struct FileKeyLess {
  bool operator()(const FileKey& a, const FileKey& b) const {
    return std::tie(a.fs, a.ino, a.seq) < std::tie(b.fs, b.ino, b.seq);
  }
};

}  // namespace oans
