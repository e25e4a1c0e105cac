// What the plan gives back, as the filesystem counts it, computed once every operation
// is known (docs/reliability.md, "Space"):
//   frees      the disk bytes of each data extent whose every reference the plan drops
//              (the index's census of references, IndexExtent: snapshots and copies
//              outside the scanned roots hold an extent too), the compressed size for a
//              compressed one, less the bytes its rewrites copy into new extents. A file
//              drops its reference to an extent when the plan covers every piece of the
//              file that points into it. An extent the census does not list (an index
//              without one, XFS, ext4) counts as freed when the plan covers its piece,
//              unless FIEMAP called the piece shared (another file holds it too).
//   later      of the extents not freed, those whose remaining references are all in
//              read-only subvolumes: what their expiry frees.
//   metadata   btrfs only: each leaf of a subvolume's tree holding a destination's
//              extent items is rewritten; where the tree is shared with a snapshot, the
//              old leaf stays and a new one (and its path) is added, times the metadata
//              profile's copies. Leaves are told apart by inode number (items are
//              ordered by it), at the subvolume's inodes per leaf. The extent tree grows
//              by a reference per destination piece and shrinks by freed extents and
//              their checksums.
//   net        frees less metadata.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "lib/plan/state.h"

namespace oans {

// A destination file's reference to a census extent, and whether the plan drops it.
struct SpaceDrop {
  size_t extent;  // in PlanState::census
  uint32_t file;
  bool all;       // every piece of the file pointing into the extent is covered
  bool operator<(const SpaceDrop& o) const { return std::tie(extent, file) < std::tie(o.extent, o.file); }
};

// What the plan's operations (as the snapshot policy leaves them) do to the space.
struct SpaceTally {
  std::vector<SpaceDrop> drops;  // sorted by extent, then file
  std::vector<uint32_t> dest_files;  // every destination file, census or not
  int64_t unknown_freed = 0;     // covered pieces of extents the census does not list
  int64_t rewritten = 0, pieces = 0, planned = 0, ops = 0;
  bool unknown = false;
  std::map<uint32_t, std::set<uint64_t>> leaves;  // by plan filesystem: leaf buckets
  std::map<uint32_t, uint64_t> dests;             // by plan filesystem: destination files
};

// The btrfs facts of plan filesystem `fs`; unknown ones (node_size 0) when the loader
// recorded none.
inline IndexSubvolume SubvolumeOf(const PlanState& st, uint32_t fs) {
  return fs < st.subvolumes.size() ? st.subvolumes[fs] : IndexSubvolume{};
}

// Sorts the census, then tallies the operations.
Status TallySpace(PlanState& st, SpaceTally* t);
// The metadata rewriting `leaves` leaves of subvolume `fs` adds, with its copies.
int64_t LeafCost(const PlanState& st, uint32_t fs, uint64_t leaves);
// Extent tree bytes per data reference added or dropped.
inline constexpr int64_t kSpaceRefBytes = 40;
// Fills the space figures of st.stats from `t`.
Status SpaceFigures(PlanState& st, const SpaceTally& t);

// TallySpace, then SpaceFigures.
Status EstimateSpace(PlanState& st);

}  // namespace oans
