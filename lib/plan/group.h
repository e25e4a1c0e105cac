// The grouping stages.
// DropDuplicateInodes keeps the first record of each file.
// A file is a (filesystem UUID, subvolume, inode); it may come more than once.
// Roots overlap, an index is given twice, indexes are merged or crafted.
// No file is then a destination twice, nor counted twice.
// The inode keys are a sorted stream: one pass in bounded memory.
// GroupWholeFiles sorts whole-file keys by (filesystem, size, hash).
// Equal keys form groups of equal content.
// A group of two or more with a file new since --since goes to source.h.
// Not when all its members share one extent layout already (counted).
// When file details are on disk, the groups are walked twice.
// The first walk marks the files whose details they need.
// Those are then fetched in one sequential pass.
#pragma once

#include <vector>

#include "lib/plan/state.h"

namespace oans {

Status DropDuplicateInodes(PlanState& st);
Status GroupWholeFiles(PlanState& st, std::vector<GroupReport>* reports);

}  // namespace oans
