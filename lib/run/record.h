// The record of one generation's run: "run-N.json" in the state directory, one JSON
// object (docs/format.md, "Run records"). Written when the run starts and again when each
// step starts and ends (temporary name, fsync, rename), so that `oans status` sees a run
// in progress and its phase, and afterwards what each step did: its duration, its exit
// code and its tool's own summary (the --summary-file each tool is given), with the
// night's totals taken from those. Removed with its generation (lib/run/generations.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/json.h"
#include "lib/base/status.h"

namespace oans {

struct StepRecord {
  std::string tool;                      // "scan", "plan" or "apply"
  int64_t started_ns = 0, ended_ns = 0;  // ended 0: running
  int exit_code = -1;                    // -1: running
  Json summary;                          // the tool's summary; null when it wrote none
};

struct RunRecord {
  uint64_t generation = 0;
  int64_t pid = 0;
  int64_t started_ns = 0, ended_ns = 0;  // ended 0: running, or killed
  std::vector<std::string> roots;
  bool plan_only = false;
  std::vector<StepRecord> steps;
  int exit_code = -1;
  std::string message;  // what failed, or what to do next
  // The running totals of the state directory before this run (TotalsBefore).
  Json totals_before = Json::object();
};

// The record as written: its fields, then the totals taken from the steps' summaries
// (files_scanned, files_read, bytes_planned, bytes_deduped, bytes_linked, bytes_skipped
// and skipped, bytes by reason; the space apply measured: data_freed_bytes,
// metadata_grown_bytes, net_freed_bytes, space_approximate), each only when the step
// that counts it ran; then the running totals over every generation
// (bytes_deduped_total, bytes_linked_total, and bytes_freed_total once apply measures
// the data it freed, data_freed_bytes).
Json RecordJson(const RunRecord& r);

// The running totals of the newest record in the state directory: its "..._total"
// fields (a record without them counts its own figures). Empty when there is none.
Json TotalsBefore(int state_fd);

// Keeps the record of the run in a state directory up to date. Writing it is best
// effort: the first failure is kept in status() and the run goes on.
class Recorder {
 public:
  Recorder(int state_fd, const std::string& state_dir, RunRecord r);
  // Where a step's tool writes its summary (--summary-file), in the state directory.
  std::string SummaryPath(const std::string& tool) const;
  void Begin(const std::string& tool);
  // The step ended with exit_code; its summary file is read and removed.
  void End(int exit_code);
  void Finish(int exit_code, const std::string& message);
  Json json() const { return RecordJson(r_); }
  const Status& status() const { return status_; }

 private:
  void Save();
  int fd_;
  std::string dir_;
  RunRecord r_;
  Status status_;
};

// What `oans status` shows of a state directory: {"state_dir", "roots", "running" (the
// run holding the lock: pid, generation and phase, or null), "generations" (the newest
// `last` records, oldest first)}. A record that cannot be read is left out.
Result<Json> StatusOf(const std::string& state_dir, size_t last);

// Local time of ns since the epoch, ISO 8601 with the offset ("2026-12-02T01:30:05+0100").
std::string IsoTime(int64_t ns);

}  // namespace oans
