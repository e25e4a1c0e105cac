// The rounds stage: the operations, sorted by the source's physical offset, packed into
// rounds of at most --round-size bytes read. One pass counts the rounds for the header
// (and fills the plan's totals); without an output (a report) that is all. Otherwise the
// files the plan names are fetched (in one sequential pass when their details are on
// disk) and a second pass, draining the operations, writes each round with its own file
// table.
#pragma once

#include "lib/plan/state.h"

namespace oans {

// Rounds the operations in PlanState::ops make (they stay queued).
// Fills the plan's totals in the header.
Result<uint64_t> CountRounds(PlanState& st);

// Writes the `rounds` rounds CountRounds counted, draining the operations.
Status WriteRounds(PlanState& st, uint64_t rounds, OutputFile* out);

}  // namespace oans
