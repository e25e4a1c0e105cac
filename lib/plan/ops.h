// The ops stage splits a unit into operations.
// A unit is a source range and its destinations, from source.h or blocks.h.
// An operation fits one round (--round-size bytes read, source and destinations).
// It also fits one FIDEDUPERANGE call (at most 127 destinations).
// Each gets its physical addresses and is queued in PlanState::ops.
// The queue is sorted by the source's physical offset, for rounds.h.
// Operations with several destinations are kept whole in PlanState::op_store.
// The key holds a single destination itself.
#pragma once

#include <string>

#include "lib/plan/state.h"

namespace oans {

Status AddOps(PlanState& st, const Unit& u);

// An operation in the operation store, and back.
std::string EncodeOp(const PlanOp& op);
Status DecodeOp(const std::string& in, PlanOp* op);
// The operation a key stands for (from the store when it has several destinations),
// without the destinations the snapshot policy leaves alone (none may be left).
Status OpOfKey(PlanState& st, const OpKey& k, std::string* scratch, PlanOp* op);

}  // namespace oans
