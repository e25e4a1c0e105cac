#include "lib/run/run.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "lib/base/fd.h"
#include "lib/base/fsinfo.h"
#include "lib/run/generations.h"
#include "lib/run/record.h"
#include "lib/run/run_lock.h"
#include "lib/run/spawn.h"
#include "lib/run/state_dir.h"

namespace oans {
namespace {

// The run's exit code from a tool's: 0 and 1 go on, 3 stops, anything else fails.
bool Continue(int rc) { return rc == 0 || rc == 1; }

struct Step {
  RunOutcome* out;
  Recorder* rec = nullptr;  // keeps the record of the run, when there is one
  // oans run: the tools' stdout goes to our stderr. Ours holds only the record.
  bool stdout_to_stderr = false;
  // Runs oans-TOOL; false (and the outcome set) when the run cannot go on.
  bool Tool(const std::string& tool, std::vector<std::string> argv, int* rc) {
    const std::string what = "the " + tool;
    if (rec) {
      argv.insert(argv.begin() + 1, {"--summary-file", rec->SummaryPath(tool)});
      rec->Begin(tool);
    }
    auto r = RunChild(argv, nullptr, stdout_to_stderr);
    if (rec) rec->End(r.ok() ? *r : 2);
    if (!r.ok()) {
      out->exit_code = 2;
      out->message = r.status().message();
      return false;
    }
    *rc = *r;
    if (Continue(*r) && !StopRequested()) return true;
    out->exit_code = *r == 3 || StopRequested() ? 3 : 2;
    out->message = what + (out->exit_code == 3 ? " stopped; run again to continue"
                                              : " failed (exit " + std::to_string(*r) + "); see its message above");
    return false;
  }
};

// This run's roots and options. With roots: those given, stored later.
// Without: the stored ones, followed by those given.
Result<RunConfig> Settle(const RunRequest& req, const std::vector<std::string>& roots, int fd, const std::string& dir) {
  auto old = LoadRunConfig(fd, dir);
  if (roots.empty()) {
    if (!old.ok()) return old.status();
    RunConfig c = *old;
    const RunConfig& given = req.config;
    c.scan_args.insert(c.scan_args.end(), given.scan_args.begin(), given.scan_args.end());
    c.plan_args.insert(c.plan_args.end(), given.plan_args.begin(), given.plan_args.end());
    c.apply_args.insert(c.apply_args.end(), given.apply_args.begin(), given.apply_args.end());
    if (req.keep_given) c.keep = given.keep;
    if (req.note)
      for (const auto& i : c.ignored) req.note(dir + "/run.conf: " + i);
    return c;
  }
  RunConfig c = req.config;
  c.roots = roots;
  c.ignored.clear();
  if (old.ok() && old->roots != roots)
    return Status::Invalid("state directory " + dir + " holds the generations of other roots (" + old->roots[0] +
                           (old->roots.size() > 1 ? ", ..." : "") + "); give another --state-dir");
  return c;
}

// Refuses roots on a filesystem that cannot share data as the apply options ask.
Status CheckRootsCanShare(const RunRequest& req, const RunConfig& c) {
  std::vector<std::string> args = c.apply_args;
  args.insert(args.end(), req.extra_apply_args.begin(), req.extra_apply_args.end());
  const bool hardlink = AppliesHardlinks(args);
  for (const auto& r : c.roots) OANS_RETURN_IF_ERROR(CheckPathCanShareData(r, hardlink));
  return Status::Ok();
}

// Settles the run's configuration in the locked state directory.
// Stores it when roots are given, else checks the stored roots.
Result<RunConfig> Prepare(const RunRequest& req, const std::vector<std::string>& roots, int fd, const std::string& dir) {
  OANS_ASSIGN_OR_RETURN(RunConfig c, Settle(req, roots, fd, dir));
  // Given roots were checked before the state directory was opened (RunGeneration).
  if (!roots.empty()) {
    OANS_RETURN_IF_ERROR(SaveRunConfig(fd, dir, c));
    return c;
  }
  OANS_RETURN_IF_ERROR(CheckNotOnRoots(fd, dir, c.roots));
  // `oans apply` leaves the check to oans-apply, which makes it with its own options.
  if (!req.apply_newest) OANS_RETURN_IF_ERROR(CheckRootsCanShare(req, c));
  return c;
}

// Scan, plan and apply generation out->generation in the locked, checked state
// directory. prev is the generation with the newest index.
void Steps(const RunRequest& req, const RunConfig& c, int fd, const Generation* prev, RunOutcome* out, Recorder* rec) {
  const std::string dir = out->state_dir, idx = dir + "/" + IndexName(out->generation);
  const std::string plan = dir + "/" + PlanName(out->generation);
  Step step{out, rec, true};
  int scan_rc = 0, plan_rc = 0, apply_rc = 0;
  std::vector<std::string> scan = {req.tool_dir + "/oans-scan", "-o", idx};
  if (prev) scan.insert(scan.end(), {"--previous", dir + "/" + IndexName(prev->number)});
  scan.insert(scan.end(), req.per_run_args.begin(), req.per_run_args.end());
  scan.insert(scan.end(), c.scan_args.begin(), c.scan_args.end());
  if (SharesWholeFilesOnly(c)) scan.push_back("--whole-files-only");
  scan.push_back("--");
  scan.insert(scan.end(), c.roots.begin(), c.roots.end());
  if (!step.Tool("scan", scan, &scan_rc)) return;
  std::vector<std::string> planv = {req.tool_dir + "/oans-plan", "-o", plan};
  planv.insert(planv.end(), req.per_run_args.begin(), req.per_run_args.end());
  planv.insert(planv.end(), c.plan_args.begin(), c.plan_args.end());
  // After a plan applied to the end, its files' duplicates are shared or refused.
  // Only what changed since needs planning.
  if (prev && prev->applied) planv.insert(planv.end(), {"--since", dir + "/" + IndexName(prev->number)});
  planv.insert(planv.end(), {"--", idx});
  if (!step.Tool("plan", planv, &plan_rc)) return;
  out->plan = plan;
  if (!req.plan_only) {
    std::vector<std::string> apply = {req.tool_dir + "/oans-apply"};
    apply.insert(apply.end(), req.per_run_args.begin(), req.per_run_args.end());
    apply.insert(apply.end(), c.apply_args.begin(), c.apply_args.end());
    apply.insert(apply.end(), req.extra_apply_args.begin(), req.extra_apply_args.end());
    apply.insert(apply.end(), {"--", plan});
    bool go_on = step.Tool("apply", apply, &apply_rc);
    out->applied = go_on;
    if (go_on && apply_rc == 0 && out->exit_code != 3) (void)MarkApplied(fd, out->generation);
    if (!go_on && out->exit_code != 3) return;
  }
  // The generation is complete (its plan exists): older ones can go.
  if (Status s = RemoveOldGenerations(fd, c.keep, &out->removed); !s.ok()) {
    out->exit_code = 2;
    out->message = s.message();
    return;
  }
  if (out->exit_code == 3) return;
  out->exit_code = scan_rc == 1 || apply_rc == 1 ? 1 : 0;
  if (req.plan_only) out->message = "planned only; apply it in the maintenance window with: oans apply " + plan;
}

// One generation, with its record (lib/run/record.h) kept from start to end.
void RunSteps(const RunRequest& req, const RunConfig& c, int fd, RunOutcome* out) {
  auto gens = ListGenerations(fd);
  if (!gens.ok()) {
    out->message = gens.status().message();
    return;
  }
  out->generation = gens->empty() ? 1 : gens->back().number + 1;
  RunRecord record;
  record.generation = out->generation;
  record.roots = c.roots;
  record.plan_only = req.plan_only;
  record.totals_before = TotalsBefore(fd);
  Recorder rec(fd, out->state_dir, std::move(record));
  Steps(req, c, fd, NewestIndex(*gens), out, &rec);
  rec.Finish(out->exit_code, out->message);
  out->record = rec.json();
  if (!rec.status().ok() && req.note) req.note(rec.status().message() + " (the run went on without it)");
}

// `oans apply` without a plan: the newest complete generation's plan, under the lock.
void ApplyNewest(const RunRequest& req, const RunConfig& c, int fd, RunOutcome* out) {
  auto gens = ListGenerations(fd);
  if (!gens.ok()) {
    out->message = gens.status().message();
    return;
  }
  for (auto it = gens->rbegin(); it != gens->rend() && out->plan.empty(); ++it)
    if (it->index && it->plan) {
      out->generation = it->number;
      out->plan = out->state_dir + "/" + PlanName(it->number);
    }
  if (out->plan.empty()) {
    out->message = "no plan in " + out->state_dir + " yet: run oans run --plan-only first";
    return;
  }
  std::vector<std::string> apply = {req.tool_dir + "/oans-apply"};
  apply.insert(apply.end(), c.apply_args.begin(), c.apply_args.end());
  apply.insert(apply.end(), req.extra_apply_args.begin(), req.extra_apply_args.end());
  apply.insert(apply.end(), {"--", out->plan});
  int rc = 0;
  Step step{out};
  if (!step.Tool("apply", apply, &rc)) return;
  out->applied = true;
  out->exit_code = rc;
}

// The lock, waiting up to req.wait_lock_seconds while another run holds it.
// It is polled each second; a stop request ends the wait.
Result<RunLock> TakeLock(const RunRequest& req, int fd, const std::string& dir) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(req.wait_lock_seconds);
  for (bool told = false;; told = true) {
    auto lock = RunLock::Take(fd, dir);
    if (lock.ok() || lock.status().code() != Status::Code::kBusy) return lock;
    if (std::chrono::steady_clock::now() >= until || StopRequested()) return lock;
    if (!told && req.note)
      req.note(lock.status().message().substr(0, lock.status().message().find(';')) + "; waiting for it up to " +
               std::to_string(req.wait_lock_seconds) + " s (--wait-lock)");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace

Result<std::string> ChooseStateDir(const RunRequest& req, const std::vector<std::string>& roots) {
  if (!req.state_dir.empty()) {
    if (req.state_dir[0] == '/') return req.state_dir;
    char* cwd = ::getcwd(nullptr, 0);
    if (!cwd) return Status::Io("getcwd", errno);
    std::string abs = std::string(cwd) + "/" + req.state_dir;
    std::free(cwd);
    return abs;
  }
  if (!roots.empty()) return req.state_base + "/" + StateDirName(roots);
  auto stored = StoredStateDirs(req.state_base);
  if (stored.size() == 1) return stored[0];
  if (stored.empty())
    return Status::Invalid("no stored roots under " + req.state_base + ": give ROOT... the first time (oans run ROOT...)");
  std::string list;
  for (const auto& s : stored) list += "\n  " + s;
  return Status::Invalid("several state directories under " + req.state_base +
                         "; say which with --state-dir DIR, or give ROOT...:" + list);
}

Result<std::string> ShowRunConfig(const RunRequest& req) {
  std::vector<std::string> roots;
  if (!req.roots.empty()) {
    OANS_ASSIGN_OR_RETURN(roots, CanonicalRoots(req.roots));
  }
  OANS_ASSIGN_OR_RETURN(std::string dir, ChooseStateDir(req, roots));
  OANS_ASSIGN_OR_RETURN(int opened, OpenStateDir(dir, /*create=*/false));
  const Fd fd(opened);
  auto c = LoadRunConfig(fd.get(), dir);
  if (!c.ok()) return c.status();
  return FormatRunConfig(*c, dir);
}

RunOutcome RunGeneration(const RunRequest& req) {
  RunOutcome out;
  std::vector<std::string> roots;
  if (!req.roots.empty()) {
    auto r = CanonicalRoots(req.roots);
    if (!r.ok()) {
      out.message = r.status().message();
      return out;
    }
    roots = *r;
    RunConfig given = req.config;
    given.roots = roots;
    // Before the state directory is made: a refused run leaves nothing.
    if (Status s = CheckRootsCanShare(req, given); !s.ok()) {
      out.message = s.message();
      return out;
    }
  }
  auto dir = ChooseStateDir(req, roots);
  if (!dir.ok()) {
    out.message = dir.status().message();
    return out;
  }
  out.state_dir = *dir;
  bool created = false;
  auto fd = OpenStateDir(*dir, !roots.empty(), &created);
  if (!fd.ok()) {
    out.message = fd.status().message();
    return out;
  }
  const Fd state(*fd);  // closed on return
  // Checked before anything is written into it; a directory made for nothing goes again.
  Status st = roots.empty() ? Status::Ok() : CheckNotOnRoots(*fd, *dir, roots);
  if (!st.ok() && created) ::rmdir(dir->c_str());
  if (st.ok()) {
    auto lock = TakeLock(req, *fd, *dir);
    if (!lock.ok()) st = lock.status();
    Result<RunConfig> c = st.ok() ? Prepare(req, roots, *fd, *dir) : Result<RunConfig>(st);
    if (st.ok() && !c.ok()) st = c.status();
    if (st.ok() && req.apply_newest) ApplyNewest(req, *c, *fd, &out);
    else if (st.ok()) RunSteps(req, *c, *fd, &out);
  }
  if (!st.ok()) {
    out.exit_code = st.code() == Status::Code::kBusy ? 4 : 2;
    out.message = st.message();
  }
  return out;
}

}  // namespace oans
