// The figures of a plan's summary (lib/base/figures.h).
// They are its `--json` fields and the words of its human summary.
// docs/format.md lists them.
#pragma once

#include "lib/base/figures.h"
#include "lib/plan/diff.h"
#include "lib/plan/planner.h"

namespace oans {

const Figures<PlanStats>& PlanFigures();
// oans-diff's counts of files added, removed, changed, renamed and unchanged.
const Figures<DiffStats>& DiffFigures();

}  // namespace oans
