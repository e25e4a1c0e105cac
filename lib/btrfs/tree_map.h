// Regular btrfs files mapped from their items instead of being opened or stat'ed: a tree
// search of their subvolume (BTRFS_IOC_TREE_SEARCH_V2 through a descriptor of their
// directory, keys (ino, INODE_ITEM, 0) to (ino, EXTENT_DATA, max)) gives each file's
// inode item (size, times, links, mode; flags as FS_IOC_GETFLAGS reports them) and its
// file extent items, from which the map is built as btrfs's FIEMAP builds it: one extent
// per item (a compressed one at its disk address, flagged ENCODED; inline ones INLINE
// and NOT_ALIGNED; preallocated ones UNWRITTEN; holes left out), neighbours contiguous
// in the file and on disk with the same flags merged, LAST on the extent that ends the
// last item. Unlike FIEMAP it does not compute SHARED (a walk of the extent's back
// references, the dearest part of FIEMAP); the planner tells shared data by equal
// addresses.
//
// The items are the tree's as it is at the search: after a syncfs, what every file held
// at that commit, and for a file written since, an earlier state (or its new extents
// before its new size). Such a record can only nominate a pair that apply then refuses
// (it checks size and mtime on the open file) or that the kernel's compare rejects.
// Needs CAP_SYS_ADMIN, like the checksum search.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/btrfs/search.h"
#include "lib/base/status.h"
#include "lib/base/btrfs_sys.h"
#include "lib/base/file_sys.h"

namespace oans {

struct TreeMap {
  uint64_t ino = 0;
  BtrfsInodeItem inode;
  uint32_t inode_flags = 0;  // FS_*_FL, as FS_IOC_GETFLAGS has them
  std::vector<FiemapExtent> extents;
  // The bytes of the one uncompressed inline extent that holds the whole file; empty
  // otherwise.
  std::string inline_data;

  // The stat of the file as its inode item has it, on device `dev` (its directory's).
  FileStat Stat(uint64_t dev) const;
};

// One inode's map, built from its items in key order (any items of the inode may be
// given; only its inode item and file extent items count).
class TreeMapBuilder {
 public:
  explicit TreeMapBuilder(uint64_t ino) { map_.ino = ino; }
  uint64_t ino() const { return map_.ino; }
  // False when the item cannot be used: the map is then not to be trusted.
  bool Add(const BtrfsItem& it);
  // False without an inode item.
  bool Finish(TreeMap* out);

 private:
  void Emit(uint64_t logical, uint64_t physical, uint64_t length, uint32_t flags);

  TreeMap map_;
  bool have_inode_ = false;
  uint64_t last_end_ = 0, items_ = 0, inline_items_ = 0;
};

// The map of inode `ino` of the subvolume `dirfd` lies in; false when the search finds
// no inode item for it or an item it cannot decode.
Result<bool> MapFromTree(BtrfsSys& sys, int dirfd, uint64_t ino, TreeMap* out);

// The maps of the inodes `inos` (sorted, distinct) of that subvolume, in one search of the
// key range from the first to the last, for the inodes of one directory, which btrfs
// numbers close together when they are made together. Items of other inodes in the range
// are passed over; once more than `max_items` items have come, the search stops and the
// inodes not yet complete are left out. `out` holds the maps found, by inode.
Status MapManyFromTree(BtrfsSys& sys, int dirfd, const std::vector<uint64_t>& inos, uint64_t max_items,
                       std::vector<TreeMap>* out);

// The maps of the regular files of one batch of directory entries (getdents), made
// before the batch is gone through: one MapManyFromTree per run of inode numbers less
// than 64 apart (files made together are numbered together), at most 16 items a file
// on average (past it, the rest are searched one by one). One object per thread.
class BatchMaps {
 public:
  // Maps the batch's regular files, in the subvolume `dirfd` lies in; forgets the last.
  void Map(BtrfsSys& sys, int dirfd, const std::vector<DirEntry>& batch);
  void Clear();
  // The map of `ino` of directory `dirfd`, taken out of the batch (a second name of the
  // same inode gets a search of its own), else one search of its own (MapFromTree).
  bool Take(BtrfsSys& sys, int dirfd, uint64_t ino, TreeMap* out);

 private:
  int dirfd_ = -1;
  std::vector<TreeMap> maps_;  // by inode
  std::vector<bool> taken_;    // maps_[i] handed out
};

// FS_IOC_GETFLAGS's flags for a btrfs inode item's flags.
uint32_t FsFlagsOfBtrfs(uint64_t inode_flags);

}  // namespace oans
