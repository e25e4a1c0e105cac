#include "lib/run/record.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include "lib/base/fd.h"
#include "lib/run/generations.h"
#include "lib/run/record_figures.h"
#include "lib/run/run_config.h"
#include "lib/run/state_dir.h"
#include "lib/run/timer.h"

namespace oans {
namespace {

constexpr size_t kMaxRecordSize = 4 << 20;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Time or null: a time not yet reached is null in a record.
Json TimeOrNull(int64_t ns) { return ns ? Json(IsoTime(ns)) : Json(); }

// A file of the state directory, read whole without following a symlink; "" when it is
// missing, larger than `max` or unreadable.
std::string ReadSmall(int dirfd, const std::string& name, size_t max) {
  const Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return "";
  std::string text(max + 1, '\0');
  size_t got = 0;
  for (ssize_t n; got < text.size() && (n = ::read(fd.get(), text.data() + got, text.size() - got)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      got = 0;
      break;
    }
    got += size_t(n);
  }
  text.resize(got > max ? 0 : got);
  return text;
}

// The totals of the night, from the summaries of the steps that ran.
void AddTotals(const RunRecord& r, Json* j) {
  for (const auto& s : r.steps) {
    const Json& m = s.summary;
    if (!m.is_object()) continue;
    for (const auto& c : RecordCopies())
      if (s.tool == c.tool && m.contains(c.from)) (*j)[c.field] = m[c.from];
    // The data oans-apply measured freed. Absent or null when it could not measure.
    if (s.tool == "apply" && m.contains("data_freed_bytes") && m["data_freed_bytes"].is_number_unsigned())
      (*j)["bytes_freed"] = m["data_freed_bytes"];
  }
}

uint64_t Unsigned(const Json& j, const std::string& key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

void AddRunningTotals(const Json& before, Json* j) {
  for (const std::string key : RecordCounted()) {
    const std::string total = key + "_total";
    if (!j->contains(key) && !before.contains(total) && key == "bytes_freed") continue;
    (*j)[total] = Unsigned(before, total) + Unsigned(*j, key);
  }
}

// The tool a process runs as its child ("apply" for oans-apply), from /proc; "" when none.
std::string ChildTool(long pid) {
  const std::string p = std::to_string(pid);
  const std::string kids = ReadSmall(AT_FDCWD, "/proc/" + p + "/task/" + p + "/children", 4096);
  for (size_t at = 0; at < kids.size();) {
    const size_t end = kids.find(' ', at);
    const std::string kid = kids.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? kids.size() : end + 1;
    std::string comm = ReadSmall(AT_FDCWD, "/proc/" + kid + "/comm", 64);
    if (comm.rfind("oans-", 0) == 0 && comm.size() > 6) return comm.substr(5, comm.size() - 6);
  }
  return "";
}

// The run holding the lock, from the pid the lock file holds: alive and an oans
// process. Its generation and phase come from the newest record when that is its own.
// A run may be about to write it; `oans apply` of the newest plan keeps none.
// Then the phase is the tool it runs.
Json Running(int dirfd, const std::vector<Json>& records) {
  const std::string text = ReadSmall(dirfd, "lock", 32);
  char* end = nullptr;
  const long pid = std::strtol(text.c_str(), &end, 10);
  if (pid <= 0 || end == text.c_str()) return nullptr;
  if (::kill(pid_t(pid), 0) != 0 && errno != EPERM) return nullptr;
  if (ReadSmall(AT_FDCWD, "/proc/" + std::to_string(pid) + "/comm", 64) != "oans\n") return nullptr;
  Json r = {{"pid", pid}};
  if (!records.empty()) {
    const Json& last = records.back();
    if (last.value("pid", int64_t(0)) == pid && last.value("ended", Json()).is_null()) {
      r["generation"] = last.value("generation", Json());
      r["phase"] = last.value("phase", Json());
      r["started"] = last.value("started", Json());
      return r;
    }
  }
  const std::string tool = ChildTool(pid);
  r["phase"] = tool.empty() ? "starting" : tool;
  return r;
}

}  // namespace

std::string IsoTime(int64_t ns) {
  const time_t t = time_t(ns / 1000000000);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

Json RecordJson(const RunRecord& r) {
  Json steps = Json::array();
  std::string phase = r.ended_ns ? "done" : "starting";
  for (const auto& s : r.steps) {
    if (!s.ended_ns && !r.ended_ns) phase = s.tool;
    const double seconds = double((s.ended_ns ? s.ended_ns : NowNs()) - s.started_ns) / 1e9;
    steps.push_back(Json{{"tool", s.tool},
                         {"started", TimeOrNull(s.started_ns)},
                         {"seconds", s.ended_ns ? Json(double(int64_t(seconds * 10 + 0.5)) / 10) : Json()},
                         {"exit_code", s.exit_code >= 0 ? Json(s.exit_code) : Json()},
                         {"summary", s.summary}});
  }
  Json j = {{"generation", r.generation},
            {"pid", r.pid},
            {"started", TimeOrNull(r.started_ns)},
            {"ended", TimeOrNull(r.ended_ns)},
            {"phase", phase},
            {"exit_code", r.exit_code >= 0 ? Json(r.exit_code) : Json()},
            {"message", JsonText(r.message)},
            {"roots", JsonTextArray(r.roots)},
            {"plan_only", r.plan_only},
            {"steps", std::move(steps)}};
  AddTotals(r, &j);
  AddRunningTotals(r.totals_before, &j);
  return j;
}

Json TotalsBefore(int state_fd) {
  Json totals = Json::object();
  auto gens = ListGenerations(state_fd);
  if (!gens.ok()) return totals;
  for (auto g = gens->rbegin(); g != gens->rend(); ++g) {
    if (!g->record) continue;
    Json r = Json::parse(ReadSmall(state_fd, RecordName(g->number), kMaxRecordSize), nullptr, false);
    if (!r.is_object()) continue;
    for (const std::string key : RecordCounted()) {
      const std::string total = key + "_total";
      if (r.contains(total) || r.contains(key)) totals[total] = r.contains(total) ? Unsigned(r, total) : Unsigned(r, key);
    }
    break;
  }
  return totals;
}

Recorder::Recorder(int state_fd, const std::string& state_dir, RunRecord r)
    : fd_(state_fd), dir_(state_dir), r_(std::move(r)) {
  r_.pid = ::getpid();
  r_.started_ns = NowNs();
  Save();
}

std::string Recorder::SummaryPath(const std::string& tool) const { return dir_ + "/.summary-" + tool + ".json"; }

void Recorder::Begin(const std::string& tool) {
  ::unlinkat(fd_, (".summary-" + tool + ".json").c_str(), 0);  // none left from a killed run
  r_.steps.push_back({tool, NowNs(), 0, -1, Json()});
  Save();
}

void Recorder::End(int exit_code) {
  if (r_.steps.empty()) return;
  StepRecord& s = r_.steps.back();
  s.ended_ns = NowNs();
  s.exit_code = exit_code;
  const std::string name = ".summary-" + s.tool + ".json";
  const std::string text = ReadSmall(fd_, name, kMaxRecordSize);
  ::unlinkat(fd_, name.c_str(), 0);
  Json summary = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (summary.is_object()) s.summary = std::move(summary);
  Save();
}

void Recorder::Finish(int exit_code, const std::string& message) {
  r_.ended_ns = NowNs();
  r_.exit_code = exit_code;
  r_.message = message;
  Save();
}

void Recorder::Save() {
  const std::string name = RecordName(r_.generation), tmp = "." + name + ".new";
  const std::string line = JsonLine(RecordJson(r_)) + "\n";
  int fd = ::openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == ssize_t(line.size());
  int err = errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::renameat(fd_, tmp.c_str(), fd_, name.c_str()) != 0) ok = false, err = errno;
  if (!ok && status_.ok()) status_ = Status::Io("writing the record " + dir_ + "/" + name, err);
}

Result<Json> StatusOf(const std::string& state_dir, size_t last) {
  OANS_ASSIGN_OR_RETURN(int fd, OpenStateDir(state_dir, /*create=*/false));
  auto gens = ListGenerations(fd);
  if (!gens.ok()) {
    ::close(fd);
    return gens.status();
  }
  std::vector<Json> records;
  for (const auto& g : *gens) {
    if (!g.record) continue;
    Json r = Json::parse(ReadSmall(fd, RecordName(g.number), kMaxRecordSize), nullptr, false);
    if (r.is_object()) records.push_back(std::move(r));
  }
  auto conf = LoadRunConfig(fd, state_dir);
  Json out = {{"state_dir", JsonText(state_dir)},
              {"roots", conf.ok() ? JsonTextArray(conf->roots) : Json::array()},
              {"running", Running(fd, records)},
              {"next_run", Json()},
              {"generations", Json::array()}};
  if (std::string next = NextTimer(state_dir); !next.empty()) out["next_run"] = JsonText(next);
  ::close(fd);
  for (size_t i = records.size() > last ? records.size() - last : 0; i < records.size(); ++i)
    out["generations"].push_back(std::move(records[i]));
  return out;
}

}  // namespace oans
