// The rounds stage packs the operations into rounds (packing.h).
// Operations come sorted by the source's physical offset.
// A round reads at most --round-size bytes.
// CountRounds counts the rounds for the header and fills the plan's totals.
// A report (no output) stops there.
// WriteRounds fetches the files the plan names.
// With details on disk, that is one sequential pass.
// Then it drains the operations and writes each round with its file table.
#pragma once

#include "lib/plan/state.h"

namespace oans {

// Rounds the operations in PlanState::ops make (they stay queued).
// Fills the plan's totals in the header.
Result<uint64_t> CountRounds(PlanState& st);

// Writes the `rounds` rounds CountRounds counted, draining the operations.
Status WriteRounds(PlanState& st, uint64_t rounds, OutputFile* out);

}  // namespace oans
