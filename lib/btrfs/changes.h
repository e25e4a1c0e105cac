// What btrfs says changed in a subvolume since a generation, for a scan that follows
// changes instead of walking (lib/scan/follow.h). One tree search with min_transid skips
// every tree block written before; the inodes with items in the blocks it returns (a
// superset of those changed: a block holds many inodes) are then read whole, with a
// second search per run of close inode numbers: each inode's item, links, directory
// entries and file extents. No inode is looked up on its own, so the cost follows the
// tree blocks written, not the inodes in them. Owns nothing; any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/btrfs/changed_leaves.h"
#include "lib/btrfs/search.h"
#include "lib/btrfs/tree_map.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// One inode with items in a tree block written since the generation, as it is now.
struct ChangedInode {
  uint64_t ino = 0;
  bool exists = false;  // false: its inode item is gone (deleted)
  BtrfsInodeItem item;
  std::vector<std::pair<uint64_t, std::string>> links;  // (directory inode, name)
  // A directory's entries (its DIR_INDEX items): name and inode, subvolumes left out.
  std::vector<std::pair<std::string, uint64_t>> entries;
  // A regular file's map from its items (lib/btrfs/tree_map.h), when they decode;
  // without its inline data (MapFromTree gives it).
  bool mapped = false;
  TreeMap map;
};

struct SubvolumeChanges {
  std::vector<ChangedInode> inodes;  // sorted by inode number
  // More inodes than the limit were found: none is read, and a walk costs no more
  // than following would.
  bool too_many = false;
  uint64_t found = 0;     // inodes with items in the blocks written since
  uint64_t quiet = 0;     // of those, taken by the caller's judge (QuietInode)
  uint64_t searches = 0;  // tree searches made (calls of Sys::TreeSearch)
};

// Inode numbers this close are read in one search by default (ReadChangedInodes).
inline constexpr uint64_t kInodeGap = 512;

// Changed inodes beyond which a scan walks instead of holding them all.
inline constexpr size_t kMaxFollowedInodes = 250000;

// The inodes of the subvolume of `fd` with items in tree blocks written in transaction
// `since` or later, each with its current state.
Status FindSubvolumeChanges(Sys& sys, int fd, uint64_t since, SubvolumeChanges* out,
                            size_t limit = kMaxFollowedInodes);

// The two steps of FindSubvolumeChanges, for a caller that looks at the numbers first.
// The numbers of the inodes with items in tree blocks written in `since` or later,
// sorted; past `cap` of them the search ends and *over is set.
Status ChangedInodeNumbers(Sys& sys, int fd, uint64_t since, size_t cap, std::vector<uint64_t>* out, bool* over,
                           uint64_t* searches);
// Whether an inode, as its items have it now, needs no more looking at: the same as
// when it was last recorded (a backup's atime, or a tree block rewritten for a
// neighbour's sake), or what changed was taken from it (its extents, after a dedupe).
using QuietInode = std::function<bool(ChangedInode&)>;
// Inodes `inos` (sorted, distinct) read whole, added to out->inodes (in inode order)
// unless `quiet` (when set) takes them; out->quiet counts those. More than `limit` kept:
// too_many, and none kept. Numbers at most `gap` apart are read in one search (the items
// between, of inodes that did not change, cost less than a search of their own when
// their blocks are in memory); `threads` searches run at once (on an SSD: the kernel
// reads a search's blocks one at a time).
Status ReadChangedInodes(Sys& sys, int fd, const std::vector<uint64_t>& inos, const QuietInode& quiet, size_t limit,
                         SubvolumeChanges* out, size_t threads = 1, uint64_t gap = kInodeGap);
// When most of a subvolume's blocks were written since (a backup's atimes, a dedupe),
// one search instead of two: the inodes with items in the blocks written since, each
// whose items there are all of its items (its links as many as its link count, a
// directory's entries as long as its size, a file's extents as many bytes as its item
// counts) handed to `quiet` and kept unless taken. The numbers of the others, whose
// items lie partly in older blocks, go to *rest (sorted), for ReadChangedInodes.
// Only the inodes numbered `first` to `last` are looked at (a pass of the caller's).
// `splits` (sorted inode numbers) cut them into slices, each judged by a thread of its
// own, at once: `quiet` is then called from those threads. The limit counts the inodes
// all slices keep. Once `stop` (may be null) is set, returns Interrupted. With `leaves`
// (laid out for `first` to `last` at least), the items come from them, read from the
// device (changed_leaves.h), instead of from the kernel's search.
Status JudgeChangedInodes(Sys& sys, int fd, uint64_t since, const QuietInode& quiet, size_t limit,
                          std::vector<uint64_t>* rest, SubvolumeChanges* out,
                          const std::vector<uint64_t>& splits = {}, uint64_t first = kBtrfsFirstInode,
                          uint64_t last = kBtrfsLastInode, const std::atomic<bool>* stop = nullptr,
                          const ChangedLeaves* leaves = nullptr);

// Where a directory is linked: its parent directory's inode and its name there.
struct DirLink {
  uint64_t parent = 0;
  std::string name;
};

// The links of directories `inos` (sorted, distinct) of the subvolume of `fd`, added to
// *out (a directory has one); one search per run of close inode numbers, not one per
// directory. A directory not found is left out.
Status ReadDirLinks(Sys& sys, int fd, const std::vector<uint64_t>& inos, std::map<uint64_t, DirLink>* out,
                    uint64_t* searches);

}  // namespace oans
