// The load stage reads every index once, and with --since the old index.
// It fills the PlanState:
//   the plan header's roots, filesystems and block size;
//   each usable file's details;
//   its whole-file key and block keys;
//   its inode key, from a second index section on;
//   whether it is new or changed since --since (a merge join, since.h).
// Files the scan could not read are counted and left out.
// So are files with inline data.
#pragma once

#include "lib/plan/state.h"

namespace oans {

Status LoadIndexes(PlanState& st);

}  // namespace oans
