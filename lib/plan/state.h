// What the planner's stages share.
// The options, the plan header being built and the file details.
// One flag per file: changed since --since, dropped, destination, named by an operation.
// The sorters that carry records from one stage to the next.
// RunPlan (planner.cc) owns it and passes it to each stage; single-threaded.
// Memory: the budget table (budget.h) splits --memory among the stores.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/plan/budget.h"
#include "lib/plan/details.h"
#include "lib/plan/identity.h"
#include "lib/plan/keys.h"
#include "lib/plan/planner.h"

namespace oans {

struct PlanState {
  PlanState(const PlanOptions& o, Observer* observer, PlanStats* stats);

  // Interrupted once PlanOptions::stop is set.
  // Stages call it every kStopEvery items: a relaxed load, cheap.
  // The work between two checks stays a few milliseconds.
  // That holds even where one item is a whole group to plan.
  Status CheckStop() const;
  static constexpr uint64_t kStopEvery = 1024;

  const PlanOptions& o;
  Observer* observer;
  PlanStats* stats;
  std::string dir;                    // temporary files
  MemoryBudget budget;
  PlanHeader header;
  Details details;
  FilesystemIds fs_ids;               // (UUID, subvolume) -> id, for --since
  int sections = 0;                   // index sections read
  bool spinning = false;              // an index says its roots are on a spinning disk
  std::vector<bool> changed, dropped, is_dest, op_files;  // by file id
  std::vector<bool> partial_dest;  // by file id: the destination of a kept partial run (frees.h)
  std::vector<bool> dest_twice;    // by file id: ... of the runs of more than one pair (frees.h)
  // By file id: a member of a whole-file group, whose extents are or will be its twins'
  // too; never made the destination of a partial run (frees.h).
  std::vector<bool> grouped;
  // For the space estimate (space.h), by plan filesystem: its filesystem (UUID) id,
  // its btrfs subvolume's facts (node_size 0: unknown) and the highest inode loaded;
  // and the index's census of data extents, by (UUID id, bytenr).
  std::vector<uint32_t> fs_uuid;
  std::vector<IndexSubvolume> subvolumes;
  std::vector<uint64_t> max_ino;
  struct CensusExtent {
    uint32_t uuid = 0;
    uint64_t bytenr = 0, disk_bytes = 0;
    uint32_t refs = 0, ro_refs = 0;
  };
  std::vector<CensusExtent> census;
  // By file id: a destination the snapshot policy leaves alone (snapshots.h); OpOfKey
  // leaves it out of its operations. Empty: none.
  std::vector<bool> left_alone;
  ExternalSorter<WholeKey, WholeLess> whole;   // load -> group
  ExternalSorter<InodeKey, InodeLess> inodes;  // load -> duplicate inodes
  ExternalSorter<BlockKey, BlockLess> blocks;  // load -> blocks
  ExternalSorter<AnchorKey, AnchorLess> anchors;  // load -> anchors (4 KiB partial matches)
  RecordStore sums;                            // sector sums of files with anchors
  // Where the sums of each file with sums are in `sums`, in id order.
  struct SumsAt {
    uint32_t id;
    uint64_t at;
  };
  ChunkedArray<SumsAt> sums_at;
  // Records the sums of file `id`, which comes after every file with sums so far.
  Status AddSums(uint32_t id, const std::string& sector_sums);
  // Where the sums of file `id` are in `sums`.
  Result<uint64_t> SumsOf(uint32_t id) const;
  ExternalSorter<OpKey, OpLess> ops;           // source, blocks -> rounds (via ops.h)
  RecordStore op_store;                        // operations with several destinations
};

}  // namespace oans
