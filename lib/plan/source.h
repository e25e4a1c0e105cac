// The source stage: for one whole-file group (equal content), choose the source — a
// member of the largest set already sharing one extent layout, among equals the one
// earliest on disk — and for every other member the ranges it does not share with the
// source yet (ranges.h), holes in the source left out. A member with more hardlinks than
// that choice is the source instead (hardlink mode never links a file with other names). Destinations with the same
// unshared ranges become one unit, split into operations by the ops stage (ops.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/plan/state.h"

namespace oans {

// `ids`: the group's members in id order. Appends a report of the group when `reports`
// is not null.
Status PlanWholeGroup(PlanState& st, const std::vector<uint32_t>& ids, std::vector<GroupReport>* reports);

// The chosen source of `members` (details in `at`), as above.
uint32_t ChooseSource(const std::vector<uint32_t>& members, const std::function<const Detail&(uint32_t)>& at);

}  // namespace oans
