// The source stage, for one whole-file group (equal content).
// The source is a member of the largest set already sharing one extent layout.
// Among equals, the one earliest on disk.
// A member with more hardlinks than that choice is the source instead.
// Hardlink mode never links a file that has other names.
// Every other member gets the ranges it does not share with the source yet.
// Holes in the source are left out (ranges.h).
// Destinations with the same unshared ranges become one unit.
// The ops stage (ops.h) splits it into operations.
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
