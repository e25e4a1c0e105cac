// 4 KiB partial matches from sector sums (lib/format/sector_sum_encoding.h).
// At any 4 KiB alignment, between files and inside one file:
//   anchors   At load, per file with sums: where a hash of the sums of
//             kAnchorWindow sectors has its low kAnchorBits bits zero.
//             The choice is content-defined: same data, same anchors.
//             Windows of one repeated sum (zeros) are left out.
//   -> pairs  Anchors sorted by (pairing with the sums' kind, hash).
//             The group's first against every other one.
//             Each pair is (source, destination, sector offsets).
//   -> runs   Pairs sorted by (source, destination, offset difference, sector).
//             Each is extended on both files' sums, both ways.
//             It grows to the longest run of equal sums.
//             The walk goes on along the diagonal (Walk).
//             It passes up to kWalkGap unequal sectors at a time.
//             An anchor inside the runs just found is skipped.
//   -> kept   Runs of whole sectors, no compressed extent partly covered.
//             Not already sharing the source's extents.
//             Weighed a pair of files at a time: at least --min-run long.
//             On btrfs, kept only where they free extents (frees.h).
//   -> units  On to the ops stage through UnitsOfRuns (blocks.h).
// Sums of different kinds never meet: the kind is part of the pairing.
// Equal sums only nominate: the kernel's compare decides.
// Memory: the sorters and the sums store have their lines (budget.h).
// Beyond them, the sums of the two files being extended.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/plan/state.h"

namespace oans {

inline constexpr uint32_t kAnchorWindow = 8;  // sectors: 32 KiB
inline constexpr uint32_t kAnchorBits = 3;    // one anchor per 8 sectors on average

// Whether sector i of `sums` starts an anchor, and then its hash in *hash.
bool AnchorAt(std::string_view sums, size_t i, uint64_t* hash);
// Adds the anchors of file `id` (sums `sums`, pairing `pair`) to st.anchors.
Status AddAnchors(PlanState& st, std::string_view sums, uint32_t pair, uint32_t id);

// The longest run of equal sums through sector s of a and sector d of b: its first
// sectors and its length. Inside one file (same_file), the run does not overlap its copy.
struct SectorRun {
  uint64_t s = 0, d = 0, length = 0;
};
SectorRun Extend(std::string_view a, std::string_view b, uint64_t s, uint64_t d, bool same_file);

// Every run along the diagonal through sector s of a and sector d of b, in order: the
// one through (s, d), and on either side those at most kWalkGap unequal sectors from the
// next (a file rewritten in place differs from its copy in scattered sectors: each
// stretch between them is a run, found whether or not it holds an anchor).
inline constexpr uint64_t kWalkGap = 16;
std::vector<SectorRun> Walk(std::string_view a, std::string_view b, uint64_t s, uint64_t d, bool same_file);

// The steps, each draining its input; RunPlan calls them in turn.
// Then UnitsOfRuns (blocks.h) hands the runs to the ops stage.
Status PairsOfAnchors(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs);
Status RunsOfAnchors(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs, ExternalSorter<RunKey, RunLess>* runs);

}  // namespace oans
