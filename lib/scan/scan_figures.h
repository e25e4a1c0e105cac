// The figures of a scan's summary (lib/base/figures.h).
// They are its `--json` fields and the words of its human summary.
// docs/format.md lists them.
#pragma once

#include "lib/base/figures.h"
#include "lib/scan/scan.h"

namespace oans {

const Figures<ScanStats>& ScanFigures();

}  // namespace oans
