#include "lib/run/metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "lib/format/frame_stream.h"
#include "lib/run/record.h"

namespace oans {
namespace {

// A label value with \, " and newline escaped, as the text format asks.
std::string LabelValue(const std::string& v) {
  std::string s;
  for (char c : v) {
    if (c == '\\' || c == '"') s += '\\';
    if (c == '\n') s += "\\n";
    else s += c;
  }
  return s;
}

// Seconds since the epoch of a record's time ("2026-12-02T01:30:05+0100"); -1 if none.
double EpochOf(const Json& t) {
  if (!t.is_string()) return -1;
  struct tm tm = {};
  const std::string s = t.get<std::string>();
  const char* end = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S%z", &tm);
  if (!end || *end) return -1;
  const long offset = tm.tm_gmtoff;
  return double(::timegm(&tm) - offset);
}

class Writer {
 public:
  explicit Writer(const std::string& state_dir) : label_("state_dir=\"" + LabelValue(state_dir) + "\"") {}
  // One metric family with one sample.
  void Family(const char* name, const char* type, const char* help, double value) {
    Head(name, type, help);
    Sample(name, "", value);
  }
  void Head(const char* name, const char* type, const char* help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  // A sample; `labels` are more labels ("step=\"scan\"") or "".
  void Sample(const char* name, const std::string& labels, double value) {
    char num[64];  // whole numbers exactly, others (times) to the millisecond
    std::snprintf(num, sizeof num, value == double(int64_t(value)) ? "%.0f" : "%.3f", value);
    text_ += std::string(name) + "{" + label_ + (labels.empty() ? "" : "," + labels) + "} " + num + "\n";
  }
  std::string text() const { return text_; }

 private:
  std::string label_, text_;
};

double Number(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

// The figures of the run's own record: times, steps, files, bytes and skips.
void RecordFigures(const Json& r, Writer* w) {
  const double started = EpochOf(r["started"]), ended = EpochOf(r["ended"]);
  w->Family("oans_last_run_generation", "gauge", "Generation the last run made.", Number(r, "generation"));
  if (started >= 0) w->Family("oans_last_run_start_timestamp_seconds", "gauge", "When the last run started.", started);
  if (started >= 0 && ended >= 0)
    w->Family("oans_last_run_duration_seconds", "gauge", "How long the last run took.", ended - started);
  w->Head("oans_last_run_step_duration_seconds", "gauge", "How long each step of the last run took.");
  for (const auto& s : r["steps"])
    if (s["seconds"].is_number())
      w->Sample("oans_last_run_step_duration_seconds", "step=\"" + LabelValue(s.value("tool", "")) + "\"",
                s["seconds"].get<double>());
  w->Head("oans_last_run_step_exit_code", "gauge", "Exit code of each step of the last run.");
  for (const auto& s : r["steps"])
    if (s["exit_code"].is_number())
      w->Sample("oans_last_run_step_exit_code", "step=\"" + LabelValue(s.value("tool", "")) + "\"",
                s["exit_code"].get<double>());
  const struct { const char *key, *name, *help; } gauges[] = {
      {"files_scanned", "oans_last_run_files_scanned", "Files in the last run's index."},
      {"files_read", "oans_last_run_files_read", "Files the last run read and hashed (new or changed)."},
      {"bytes_planned", "oans_last_run_bytes_planned", "Bytes the last run planned to share."},
      {"bytes_deduped", "oans_last_run_bytes_deduped", "Bytes the last run shared with FIDEDUPERANGE."},
      {"bytes_linked", "oans_last_run_bytes_linked", "Bytes of the copies the last run replaced by hardlinks."},
      {"bytes_freed", "oans_last_run_bytes_freed", "Bytes the last run freed on the filesystem."},
      {"bytes_skipped", "oans_last_run_bytes_skipped", "Bytes the last run skipped."},
  };
  for (const auto& g : gauges)
    if (r.contains(g.key) && r[g.key].is_number()) w->Family(g.name, "gauge", g.help, Number(r, g.key));
  w->Head("oans_last_run_skipped_bytes", "gauge", "Bytes the last run skipped, by reason.");
  if (r.contains("skipped") && r["skipped"].is_object())
    for (const auto& [reason, bytes] : r["skipped"].items())
      if (bytes.is_number()) w->Sample("oans_last_run_skipped_bytes", "reason=\"" + LabelValue(reason) + "\"",
                                       bytes.get<double>());
}

// The running totals over every generation, from the newest record.
void Totals(const Json& r, Writer* w) {
  const struct { const char *key, *name, *help; } counters[] = {
      {"bytes_deduped_total", "oans_deduped_bytes_total", "Bytes shared with FIDEDUPERANGE over every run."},
      {"bytes_linked_total", "oans_linked_bytes_total", "Bytes of copies replaced by hardlinks over every run."},
      {"bytes_freed_total", "oans_freed_bytes_total", "Bytes freed on the filesystem over every run."},
  };
  for (const auto& c : counters)
    if (r.is_object() && r.contains(c.key)) w->Family(c.name, "counter", c.help, Number(r, c.key));
}

}  // namespace

std::string MetricsText(const RunOutcome& out, const Json& previous, int64_t now_ns) {
  Writer w(out.state_dir);
  w.Family("oans_last_run_exit_code", "gauge",
           "Exit code of the last oans run: 0 done, 1 files skipped, 2 failed or refused, 3 stopped.",
           out.exit_code);
  w.Family("oans_last_run_timestamp_seconds", "gauge", "When the last oans run ended.", double(now_ns / 1000000) / 1e3);
  if (out.record.is_object()) RecordFigures(out.record, &w);
  Totals(out.record.is_object() ? out.record : previous, &w);
  return w.text();
}

Status WriteMetricsFile(const std::string& path, const std::string& text) {
  OANS_ASSIGN_OR_RETURN(auto file, OutputFile::Open(path));
  struct stat st;
  if (::fstat(file->fd(), &st) == 0 && S_ISREG(st.st_mode) && ::fchmod(file->fd(), 0644) != 0)
    return Status::Io("making " + path + " readable", errno);
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(file->fd(), text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io("writing " + path, errno);
    at += size_t(n);
  }
  return file->Commit();
}

Status WriteRunMetrics(const std::string& path, const RunOutcome& out) {
  Json previous;
  if (!out.record.is_object() && !out.state_dir.empty()) {
    auto s = StatusOf(out.state_dir, 1);
    if (s.ok() && !(*s)["generations"].empty()) previous = (*s)["generations"].back();
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  return WriteMetricsFile(path, MetricsText(out, previous, now));
}

}  // namespace oans
