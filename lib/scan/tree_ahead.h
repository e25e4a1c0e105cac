// Tree read-ahead for spinning disks. On btrfs, as root, the walk maps every file from the
// subvolume's tree (tree_map.h) and keys it from the checksum tree (csum.h): many small
// searches from eight walkers in directory order, each reading the tree blocks it meets
// as it meets them. On a spinning disk that sends the head back and forth across the
// metadata for every block. Before the walk, ReadTreesAhead reads both trees once, in key
// order, with one thread (TREE_SEARCH_V2 over every key, items discarded), so that the
// walk's searches find their blocks in memory. Key order follows the order btrfs wrote
// the blocks in far more closely than the walk does (docs/benchmarks.md has the traced
// figures). It reads nothing the walk would not read, and decides nothing: the records
// come from the walk's own searches as before.
//
// The blocks help only while they stay cached, so the read stops after `budget` bytes of
// items (the subvolume's tree first, its lowest inode numbers first, then the checksum
// tree); what is left is read by the walk as before.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

struct TreeAheadStats {
  uint64_t bytes = 0;      // bytes read ahead: leaves read in disk order, items read in key order
  uint64_t leaves = 0;     // leaves read in disk order
  bool on_disk = false;    // a tree was read in disk order
  bool cut_short = false;  // stopped at the budget
};

// Reads the tree of the subvolume holding `fd` and then the checksum tree, in key order,
// at most `budget` bytes of items in all (adding to *stats; a budget already spent by an
// earlier call reads nothing more).
Status ReadTreesAhead(Sys& sys, int fd, uint64_t budget, TreeAheadStats* stats);

}  // namespace oans
