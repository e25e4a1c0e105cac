// The night's figures in a run's record (run-N.json), each declared once.
// The record copies them from its steps' summaries (RecordCopies). oans status shows
// them from the record (RecordFigures). docs/format.md lists them.
#pragma once

#include <vector>

#include "lib/base/figures.h"

namespace oans {

// A record field and where it comes from: a field of a step's summary.
struct RecordCopy {
  const char* field;  // in the record
  const char* tool;   // the step: "scan", "plan" or "apply"
  const char* from;   // in that tool's summary (its --json)
};
const std::vector<RecordCopy>& RecordCopies();

// The figures counted over every generation: X_total is X plus the previous total.
const std::vector<const char*>& RecordCounted();

// Every figure of the night a record can hold, read from the record's JSON.
const Figures<Json>& RecordFigures();

}  // namespace oans
