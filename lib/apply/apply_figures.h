// The figures of an apply's summary (lib/base/figures.h).
// They are its `--json` fields and the words of its human summary.
// docs/format.md lists them.
#pragma once

#include "lib/apply/stats.h"
#include "lib/base/figures.h"

namespace oans {

const Figures<ApplyStats>& ApplyFigures();

}  // namespace oans
