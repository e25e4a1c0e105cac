// Where a tree's blocks lie on the filesystem's devices, read from them directly: the
// chunk tree's map of the metadata (single and DUP profiles), the devices opened for
// direct reads, and a tree's internal nodes read level by level, each checked to be the
// block its parent names. For reading the blocks in the order of their places
// (tree_ahead.h) or reading the leaves themselves (changed_leaves.h).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <functional>
#include <vector>

#include "lib/base/fd.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/btrfs/search.h"

namespace oans {

// Logical addresses of the filesystem's metadata to (device, offset): from the chunk
// tree. Chunks of one device whose stripe 0 is the copy btrfs reads: single and DUP.
// Striped profiles (RAID0, RAID10, RAID5, RAID6) and mirrored ones (RAID1*, read from the
// copy the reading process's pid picks) are not mapped.
class ChunkMap {
 public:
  Status Load(Sys& sys, int fd);
  // False when `logical` is in no mapped chunk (or the block would cross its end).
  bool Map(uint64_t logical, uint64_t length, uint64_t* devid, uint64_t* physical) const;

 private:
  std::map<uint64_t, BtrfsChunk> chunks_;  // by logical start
};

// The filesystem's devices, opened for direct reads as they are first needed; any thread.
class TreeDevices {
 public:
  TreeDevices(Sys& sys, int fd) : sys_(sys), fd_(fd) {}
  Result<int> Get(uint64_t devid);

 private:
  Sys& sys_;
  const int fd_;
  std::mutex mu_;
  std::map<uint64_t, Fd> open_;
};

// What every read of a tree's layout works with.
struct TreeReading {
  Sys& sys;
  int fd;
  const BtrfsInfo& info;
  const ChunkMap& chunks;
  TreeDevices* devices;
  const std::function<bool()>& stop;  // may be empty
};

// A tree block, where it lies.
struct TreeBlock {
  uint64_t physical;  // on its device, for the order
  uint64_t devid;
  BtrfsNodePtr ptr;   // where it is and the first key below it
  // The first key past it: its next sibling's (none for the tree's last blocks).
  std::optional<BtrfsKey> end;
  // An older leaf laid out beside a sibling written since (LeavesOnDisk's `shared`): the
  // inodes whose items run from one of the two into the other. Empty for the others.
  std::vector<uint64_t> shared;
};

// Whether `block`, read from a device, is the tree block `b` names: its checksum (where
// oans computes the filesystem's kind: crc32c and XXH64), filesystem, address,
// generation and level; an internal node's keys in order and within the bounds of b
// (from its key to before b.end). Decodes its header and key pointers into *out.
Status CheckTreeBlock(const BtrfsInfo& info, const TreeBlock& b, uint8_t level, std::string_view block,
                      BtrfsNode* out);
// Whether oans verifies the checksums of the filesystem's tree blocks (its kind).
bool TreeSumsComputable(const BtrfsInfo& info);

// The leaves of tree `range.tree_id` written in transaction `since` or later that hold
// keys of `range`, each with its first key, in the order of their places on disk: its
// internal nodes read level by level (each level in disk order too), none older than
// `since` and none wholly outside the range. An error when its blocks take more than
// `budget` bytes; with `since`, only the blocks written since count, and past the budget
// the leaves are cut to those of the lowest keys that fit (*cut set, *cut_at the first
// key of the first leaf left out). With `shared`, an older leaf is laid out too where an
// inode's items run into it from a sibling written since (the sibling after it begins
// inside an inode, or it does, after a sibling written since), with those inodes' numbers.
Status LeavesOnDisk(const TreeReading& r, const BtrfsSearch& range, uint64_t since, uint64_t budget,
                    std::vector<TreeBlock>* leaves, bool* cut, BtrfsKey* cut_at, bool shared = false);

}  // namespace oans
