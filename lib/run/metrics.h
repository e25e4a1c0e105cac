// The outcome of `oans run` in the Prometheus text format, for node_exporter's textfile
// collector (docs/format.md, "Metrics"). Every sample has a state_dir label, so that the
// files of several datasets can sit in one collector directory.
#pragma once

#include <cstdint>
#include <string>

#include "lib/base/json.h"
#include "lib/base/status.h"
#include "lib/run/run.h"

namespace oans {

// The metrics of a run: its exit code and end time always; the rest from its record, and
// for a run refused before its first step (no record) the running totals of `previous`,
// the newest record of the state directory (null when there is none).
std::string MetricsText(const RunOutcome& out, const Json& previous, int64_t now_ns);

// Writes `text` to `path` atomically (lib/format/frame_stream.h, OutputFile: a temporary
// file in its directory, fsync, rename; never through a symlink), mode 0644 so that the
// collector can read it.
Status WriteMetricsFile(const std::string& path, const std::string& text);

// Both, for a finished run: the newest record is read when the run has none.
Status WriteRunMetrics(const std::string& path, const RunOutcome& out);

}  // namespace oans
