// Tree read-ahead for spinning disks. On btrfs, as root, the scan maps every file from
// the subvolume's tree (lib/btrfs/tree_map.h) and keys it from the checksum tree
// (lib/scan/csum.h): many small searches from eight walkers in directory order, each
// reading the tree blocks it meets as it meets them; apply's dedupes look up and change
// the extent items of every extent they share or free. On a spinning disk each of those
// reads sends the head across the metadata. ReadTreesAhead reads the trees first, once,
// with one thread, leaf by leaf in the order of their places on disk:
//   - the tree's root item (root tree) gives its root block; its internal nodes are read
//     from the device (O_DIRECT: not kept; the kernel reads them again, with the first
//     search below each), level by level in disk order (a block's place from the chunk
//     tree's map; single and DUP profiles), each checked to be the block its parent names
//     (checksum, filesystem, address, generation, level, keys in order and within its
//     parent's bounds: lib/btrfs/tree_layout.h), and no more of them than
//     the root item's size allows;
//   - the leaves, with the first key each node gives them, of all the trees read (the
//     subvolume's and the checksum tree's leaves lie among each other's, as do the extent
//     and free space trees'), are sorted by place together, and each is read by one tree
//     search from its first key for a single item: the kernel reads that leaf, the
//     internal nodes above it with the first search below each, no other. One pass over
//     the metadata, not one per tree.
// Where a tree cannot be laid out that way (a striped profile, a device that cannot be
// opened, a block that is not the one its parent names, a tree larger than what is left
// of the budget, a mirrored profile), the scan reads it in key order instead (every item, discarded), which
// follows the order btrfs wrote the blocks in more closely than the walk does; apply
// leaves it. Nothing is decided from what is read here: the callers' own searches
// and the kernel's dedupe read the trees as before, only from memory.
//
// The blocks help only while they stay cached, so the reads stop at `budget` bytes
// (leaves read in disk order count whole, items in key order by their size). For a
// followed scan the budget counts the blocks written since, not the whole tree: past it
// the leaves of the lowest keys are read, and the scan asks again for the next inode
// numbers once it has judged those (lib/scan/follow_state.h).
// On an SSD a followed scan's judge reads the leaves written since from the device
// itself (lib/btrfs/changed_leaves.h); where it cannot, they are read ahead here with
// several threads (TreeAheadJob::readers): the kernel reads a search's blocks one at a
// time, and an SSD serves many reads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// Asked between reads; true stops the read-ahead (not an error). May be empty.
using TreeAheadStop = std::function<bool()>;

struct TreeAheadStats {
  std::vector<std::string> filesystems;  // whose whole-filesystem trees were read (UUIDs)
  uint64_t bytes = 0;      // bytes read ahead: leaves read in disk order, items read in key order
  uint64_t leaves = 0;     // leaves read in disk order
  bool on_disk = false;    // a tree was read in disk order
  bool cut_short = false;  // stopped at the budget
  // Of the last ReadTreesAhead alone: every tree it was asked for laid out on disk and
  // read in full (its blocks are in memory now);
  bool whole = false;
  // its reads in disk order stopped at the budget, or found it spent;
  bool cut = false;
  // kChanges: the leaves written since of every inode from job.first_inode below this
  // number were read (job.end_inode: all it was asked for; job.first_inode: none, or
  // it was stopped).
  uint64_t inodes_below = 0;
};

enum class TreesFor {
  kScan,   // the subvolume holding fd, then the checksum tree; key order where disk order fails
  kApply,  // the extent tree and the free space tree; disk order only
  // The subvolume holding fd, only its blocks written in transaction `since` or later
  // (a node of an older generation has nothing newer below it); disk order only. What
  // a followed scan's change search then reads (lib/btrfs/changes.h).
  kChanges,
};
// The checksum, extent and free space trees belong to the whole filesystem: they are
// read by the first call for it, not again for another subvolume (stats->filesystems).

// Which trees to read, how many bytes at most, and when to stop.
struct TreeAheadJob {
  TreesFor what;
  uint64_t budget;
  TreeAheadStop stop;
  uint64_t since = 0;  // kChanges: the oldest generation read
  // Leaves read at once, each thread taking the next in disk order: one on a spinning
  // disk, whose head then sweeps once; an SSD serves many at once.
  int readers = 1;
  // Fewer bytes of leaves laid out than this: none is read (each read is a system call).
  uint64_t least = 0;
  // kChanges: only the leaves holding items of inodes first_inode to end_inode - 1. Past
  // the budget, the leaves of the lowest numbers are read (TreeAheadStats::inodes_below).
  uint64_t first_inode = 0, end_inode = ~uint64_t(0);
};

// Reads the trees job.what names of the filesystem holding `fd`, at most job.budget bytes
// in all (adding to *stats; a budget already spent by an earlier call reads nothing more).
Status ReadTreesAhead(Sys& sys, int fd, const TreeAheadJob& job, TreeAheadStats* stats);

}  // namespace oans
