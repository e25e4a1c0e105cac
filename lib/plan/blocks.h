// The block stages, for files that are not whole-file destinations: block keys sorted by
// (pairing, block hash) give pairs of identical blocks (the group's first block against
// each other one, unless already shared or no member is new since --since); pairs
// sorted by (source, destination, offset difference) join into runs of consecutive
// blocks, weighed a pair of files at a time (on btrfs, kept only where they free extents:
// frees.h); runs sorted by source range give one unit per source range with all its
// destinations, split into operations by the ops stage (ops.h). Each step drains one
// sorter into the next.
#pragma once

#include "lib/plan/state.h"

namespace oans {

// The steps, each draining its input; RunPlan calls them in turn.
Status PairBlocks(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs);
Status RunsOfPairs(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs, ExternalSorter<RunKey, RunLess>* runs);
Status UnitsOfRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* runs);

}  // namespace oans
