// The planner: from extent indexes to a dedupe plan, as a chain of stages.
// Each stage has its own file and reads sorted streams (lib/base/stream.h).
// The external sorters (lib/base/spill.h) carry them from stage to stage.
// Past --memory, sorters spill sorted runs to temporary files and merge them.
//   load (load.h; --since: since.h)  indexes -> file details, whole-file, block, inode keys
//   -> duplicate inodes (group.h)    the same (filesystem, inode) twice keeps the first
//   -> whole-file groups (group.h)   size + hash
//   -> source (source.h)             per group: the largest set already sharing extents;
//                                    drop ranges a destination already shares (ranges.h)
//   -> blocks (blocks.h)             runs of identical blocks between the other files
//   -> anchors (anchors.h)           runs of identical 4 KiB sectors at any alignment,
//                                    for files with sector sums
//   -> ops (ops.h)                   split into operations of at most 127 destinations and
//                                    one round's size, by the source's physical offset
//   -> rounds (rounds.h)             counted, packed into rounds, written
// RunPlan calls each stage in turn; the source and ops stages run per group and unit.
// PlanState (state.h) carries what the stages share.
// Memory: one table (budget.h) splits --memory among the stores.
// Files on different filesystems (UUIDs) are never paired.
// btrfs subvolumes of one filesystem are.
// Files are the same when (UUID, subvolume, inode) are equal (identity.h).
// Their `dev` does not matter.
// Single-threaded: RunPlan runs every stage on the calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/base/observer.h"
#include "lib/base/storage.h"
#include "lib/format/plan_file.h"
#include "lib/plan/ranges.h"

namespace oans {

inline constexpr uint32_t kMaxRewritePercent = 50;   // PlanOptions::max_rewrite: rewriting < freeing
inline constexpr uint64_t kSpinningRoundSize = kHddPolicy.round_size;  // lib/base/storage.h
static_assert(kSsdPolicy.round_size == kRoundSize, "a plan without a round size has the SSD's");

// Whether destinations in read-only snapshots are planned (lib/plan/snapshots.h).
enum class SnapshotPolicy { kAuto, kAll, kNone };

struct PlanOptions {
  std::vector<std::string> indexes;   // "-" is standard input
  // Bytes read per round, sources plus destinations.
  // 0: kRoundSize, or kSpinningRoundSize when an index says its roots spin.
  // Fewer rounds mean fewer long seeks between sources and destinations.
  uint64_t round_size = 0;
  // The indexes' `spinning` was not measured (an index made from a duplicate list):
  // the plan then records no storage, and apply measures it.
  bool storage_unknown = false;
  bool whole_files = true;            // plan whole-file duplicates
  bool blocks = true;                 // plan runs of identical blocks between other files
  // Pair only files of one owner (uid).
  // Dedupe across owners leaks: shared extents tell one user what another's file holds.
  bool same_owner = false;
  // Shortest partial match planned from sector sums (anchors.h).
  // Shorter runs would split extents into slivers for little space.
  // A shorter run replacing whole extents of its destination splits nothing.
  // It is planned (frees.h).
  uint64_t min_run = 64u << 10;
  // On btrfs, partial runs may cover a destination's extent but for a few bytes.
  // If at most this percent is left, the extent is freed too.
  // Its other bytes are first copied into new extents (frees.h).
  // 0: never; at most kMaxRewritePercent.
  uint32_t max_rewrite = 10;
  SnapshotPolicy snapshots = SnapshotPolicy::kAuto;
  std::string since;                  // only groups touching files new/changed since this index
  bool since_join = false;            // join with `since` even when the index lists its changes
  // Memory for the planner, split by the table of budget.h.
  // Past it, records spill to temporary files in temp_dir.
  // temp_dir: $TMPDIR by default, else /var/tmp.
  // Beyond it: a fixed overhead and the current duplicate group.
  uint64_t memory = 512ull << 20;
  std::string temp_dir;
  std::vector<std::string> command_line;
  // Set by a signal handler to stop.
  // RunPlan then returns kInterrupted within about a second and writes nothing more.
  // The caller does not commit the output.
  const std::atomic<bool>* stop = nullptr;
};

struct PlanStats {
  uint64_t files = 0;            // usable records (hashed, not inline)
  uint64_t skipped_errors = 0;   // records the scan could not read
  uint64_t skipped_unread = 0;   // records the scan left unread (a unique size)
  uint64_t size_paired = 0;      // records the scan left unread, paired by size alone
  uint64_t size_paired_bytes = 0;  // of duplicate_bytes, destinations paired by size alone
  uint64_t skipped_inline = 0;   // data stored inline in metadata: nothing to share
  uint64_t duplicate_inodes = 0; // records of an inode met before (in this index or another)
  uint64_t whole_groups = 0;
  uint64_t block_groups = 0;
  uint64_t duplicate_bytes = 0;  // bytes of destinations identical to their source
  uint64_t shared_bytes = 0;     // of those, already sharing the source's extents
  uint64_t planned_bytes = 0;    // bytes the plan will dedupe
  uint64_t partial_bytes = 0;    // of duplicate_bytes, found as 4 KiB partial matches
  // Of the partial and block matches, bytes not planned: shorter than --min-run, or on
  // btrfs, sharing them would leave no extent unreferenced (frees.h).
  uint64_t partial_left_bytes = 0;
  // Bytes of destinations to copy into new extents so that their old extents go free.
  uint64_t rewrite_bytes = 0;
  uint64_t ops = 0, rounds = 0;
  // Operations a round took beside a neighbouring one rather than in their turn (packing.h).
  uint64_t ops_alongside = 0;
  uint64_t filesystems = 0;
  bool since_truncated = false;
  // --since OLD with one index that a scan following btrfs changes made from OLD without
  // a single change: only its header was read, and nothing is planned.
  bool unchanged_since = false;
  // --since OLD with one index that a followed scan made from OLD and whose header lists
  // its changes (since_listed.h): OLD was not read, and of the unchanged files only those
  // sharing a key with a changed one were loaded; the others are counted here, not in
  // `files` or the skipped counts.
  bool since_listed = false;
  uint64_t since_left_out = 0;
  bool spilled = false;          // records did not fit --memory and went to temporary files
  // What the filesystem will give back (space.h): disk bytes freed now (net of
  // rewrites), freed once read-only snapshots left alone expire, the metadata the
  // plan adds (btrfs), and the net. refs_known: every destination extent's references
  // were in the index's census (else such extents count as freed when covered).
  uint64_t frees_bytes = 0, frees_later_bytes = 0, metadata_bytes = 0;
  int64_t net_bytes = 0;
  bool refs_known = false;
  uint64_t leaves_rewritten = 0, leaves_shared = 0;  // of subvolume trees, estimated
  uint64_t left_alone_bytes = 0;  // destination bytes the snapshot policy left alone
  double seconds = 0;  // the tool's wall time, set by it for its summary
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

}  // namespace oans
