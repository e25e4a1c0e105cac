// The grouping stages. DropDuplicateInodes: the same (filesystem UUID, subvolume, inode)
// met more than once, in one index section or several (roots that overlapped, an index
// given twice, merged or crafted indexes), keeps its first record: no file is a
// destination twice nor counted twice. The inode keys are a sorted stream, so this is
// one pass in bounded memory. GroupWholeFiles:
// the whole-file keys, sorted by (filesystem, size, hash), form groups of equal content;
// each group of two or more with a file new or changed since --since goes to the source
// stage (source.h), unless all its members already share one extent layout (counted, no
// operation). When file details are on disk, the groups are walked twice: first to mark
// the files whose details they need, fetched in one sequential pass.
#pragma once

#include <vector>

#include "lib/plan/state.h"

namespace oans {

Status DropDuplicateInodes(PlanState& st);
Status GroupWholeFiles(PlanState& st, std::vector<GroupReport>* reports);

}  // namespace oans
