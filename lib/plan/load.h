// The load stage: reads every index once (and, with --since, the old index) and fills
// the PlanState: the plan header's roots, filesystems and block size; each usable file's
// details; its whole-file key, block keys and (from a second index section on) inode key;
// and whether it is new or changed since --since (a merge join, since.h). Files the scan
// could not read and files with inline data are counted and left out.
#pragma once

#include "lib/plan/state.h"

namespace oans {

Status LoadIndexes(PlanState& st);

}  // namespace oans
