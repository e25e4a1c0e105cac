// The block stages, for files that are not whole-file destinations.
// Block keys sorted by (pairing, block hash) give pairs of identical blocks.
// The group's first block pairs with each other one.
// Not when already shared, nor when no member is new since --since.
// Pairs sorted by (source, destination, offset difference) join into runs.
// Runs are weighed a pair of files at a time.
// On btrfs, they are kept only where they free extents (frees.h).
// Runs sorted by source range give one unit per source range.
// The ops stage (ops.h) splits each unit into operations.
// Each step drains one sorter into the next.
#pragma once

#include "lib/plan/state.h"

namespace oans {

// The steps, each draining its input; RunPlan calls them in turn.
Status PairBlocks(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs);
Status RunsOfPairs(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs, ExternalSorter<RunKey, RunLess>* runs);
Status UnitsOfRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* runs);

}  // namespace oans
