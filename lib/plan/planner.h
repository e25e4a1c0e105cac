// The planner: from extent indexes to a dedupe plan. Each stage streams a sorted
// sequence of fixed-size records (lib/spill.h: in memory up to --memory, else sorted runs
// on temporary files, merged) and file details live in a record store. Stages:
//   load (one record per inode and filesystem) -> whole-file groups (size + hash)
//   -> choose a source per group (the largest set already sharing extents)
//   -> drop ranges a destination already shares with the source (FIEMAP physical)
//   -> block runs between files that are not whole-file copies
//   -> split into operations of at most 127 destinations and one round's size
//   -> order by the source's physical offset -> pack into rounds.
// Files on different filesystems (UUIDs) are never paired; btrfs subvolumes of one
// filesystem are.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/base/observer.h"
#include "lib/format/plan_file.h"

namespace oans {

struct PlanOptions {
  std::vector<std::string> indexes;   // "-" is standard input
  uint64_t round_size = 32u << 20;    // bytes read per round: source plus destinations
  bool whole_files = true;            // plan whole-file duplicates
  bool blocks = true;                 // plan runs of identical blocks between other files
  std::string since;                  // only groups touching files new/changed since this index
  // Memory for the planner's sorted records and file details; past it they spill to
  // temporary files in temp_dir (default $TMPDIR, else /var/tmp). Beyond it: 9 bytes per
  // file, the current duplicate group and, with `since`, the old index's identities.
  uint64_t memory = 512ull << 20;
  std::string temp_dir;
  std::vector<std::string> command_line;
};

struct PlanStats {
  uint64_t files = 0;            // usable records (hashed, not inline)
  uint64_t skipped_errors = 0;   // records the scan could not read
  uint64_t skipped_inline = 0;   // data stored inline in metadata: nothing to share
  uint64_t duplicate_inodes = 0; // same inode seen in several indexes
  uint64_t whole_groups = 0;
  uint64_t block_groups = 0;
  uint64_t duplicate_bytes = 0;  // bytes of destinations identical to their source
  uint64_t shared_bytes = 0;     // of those, already sharing the source's extents
  uint64_t planned_bytes = 0;    // bytes the plan will dedupe
  uint64_t ops = 0, rounds = 0;
  uint64_t filesystems = 0;
  bool since_truncated = false;
  bool spilled = false;          // records did not fit --memory and went to temporary files
};

// A duplicate group for reports: one source and its destinations (whole files only).
struct GroupReport {
  uint64_t size = 0;
  std::string source;
  std::vector<std::string> dests;
  std::vector<bool> dest_shared;  // already fully sharing the source's extents
};

// Loads the indexes, plans, and writes the plan to `out` (the caller commits it; null
// writes no plan, for reports).
// `groups` (may be null) receives the whole-file groups.
Status RunPlan(const PlanOptions& options, OutputFile* out, Observer* observer, PlanStats* stats,
               std::vector<GroupReport>* groups = nullptr);

// --- Exposed for tests -------------------------------------------------------------

struct Range {
  uint64_t offset = 0, length = 0;
  friend bool operator==(const Range&, const Range&) = default;
};

// Byte ranges of [0, size) where `dst` maps the same physical data as `src` at the same
// file offset.
std::vector<Range> SharedRanges(const std::vector<FiemapExtent>& src, const std::vector<FiemapExtent>& dst,
                                uint64_t size);
// Complement of `shared` in [0, size), widened to `align` boundaries (or EOF).
std::vector<Range> UnsharedRanges(const std::vector<Range>& shared, uint64_t size, uint64_t align);
// Ranges of [0, size) holding data (not holes), widened to `align` boundaries.
std::vector<Range> DataRanges(const std::vector<FiemapExtent>& extents, uint64_t size, uint64_t align);
// Ranges present in both sorted, disjoint lists.
std::vector<Range> IntersectRanges(const std::vector<Range>& a, const std::vector<Range>& b);
// Physical address of `logical` in `extents`, or UINT64_MAX for a hole or unknown.
uint64_t PhysicalAt(const std::vector<FiemapExtent>& extents, uint64_t logical);

}  // namespace oans
