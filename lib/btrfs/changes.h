// What btrfs says changed in a subvolume since a generation, for a scan that follows
// changes instead of walking (lib/scan/follow.h). One tree search with min_transid skips
// every tree block written before; the inodes with items in the blocks it returns (a
// superset of those changed: a block holds many inodes) are then looked up exactly, one
// search each, for their current inode item and links. Owns nothing; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/btrfs/search.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// One inode with items in a tree block written since the generation.
struct ChangedInode {
  uint64_t ino = 0;
  bool exists = false;  // false: its inode item is gone (deleted)
  BtrfsInodeItem item;
  std::vector<std::pair<uint64_t, std::string>> links;  // (directory inode, name)
};

struct SubvolumeChanges {
  std::vector<ChangedInode> inodes;  // sorted by inode number
  // A directory entry naming another subvolume lies in a block written since: a
  // subvolume below was created, removed or snapshotted (or sits beside one that was).
  bool subvolume_entry = false;
  // More inodes than the limit were found (after a dedupe of the whole tree, say):
  // none is looked up, and a walk costs no more than following would.
  bool too_many = false;
};

// Changed inodes beyond which a scan walks instead of holding them all.
inline constexpr size_t kMaxFollowedInodes = 250000;

// The inodes of the subvolume of `fd` with items in tree blocks written in transaction
// `since` or later, each with its current state.
Status FindSubvolumeChanges(Sys& sys, int fd, uint64_t since, SubvolumeChanges* out,
                            size_t limit = kMaxFollowedInodes);

// The current state of inode `ino` of the subvolume of fd (its inode item and links).
Status LookUpInode(Sys& sys, int fd, uint64_t ino, ChangedInode* out);

}  // namespace oans
