// oans-apply PLAN: execute a dedupe plan with FIDEDUPERANGE.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "lib/apply/apply.h"
#include "lib/apply/apply_figures.h"
#include "lib/apply/dir_ahead.h"
#include "lib/apply/journal.h"
#include "lib/base/heap.h"
#include "lib/base/trust.h"
#include "lib/base/units.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/apply/options.h"
#include "tools/common/cli.h"
#include "tools/common/progress.h"
#include "tools/common/summary.h"

using namespace oans;

namespace {

// Opens a plan file and refuses it when another user could have written it.
Result<std::string> OpenTrustedPlan(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io("opening " + path, errno);
  Status trusted = CheckTrustedFile(fd, "plan", path);
  if (!trusted.ok()) {
    ::close(fd);
    return trusted;
  }
  return PinInput(fd, path);
}

// The command line, shared with `oans apply` (tools/apply/options.h).
using Args = cli::ApplyCommandLine;

// Checks what the parse could not, and completes the library's options.
// Among them is the stop flag that signals set. Returns -1 to go on, or the exit code.
int Complete(Args& a, std::atomic<bool>* stop_flag) {
  ApplyOptions& o = a.o;
  const std::string &prefetch = a.prefetch, &storage = a.storage, &link = a.link,
                    &until = a.until, &io_class = a.io_class;
  uint64_t& deadline_s = a.deadline_s;
  o.prefetch = prefetch == "on";
  o.storage = storage == "ssd" ? StorageChoice::kSsd : storage == "hdd" ? StorageChoice::kHdd : StorageChoice::kAuto;
  o.stop = stop_flag;
  cli::InstallSignalHandlers(stop_flag);
  cli::RaiseFileLimit();
  o.hardlink = link == "hard";
  for (const auto& r : a.relax) {
    if (r == "owner") o.link_policy.same_owner = false;
    if (r == "mode") o.link_policy.same_mode = false;
    if (r == "xattrs") o.link_policy.same_xattrs = false;
    if (r == "mtime") o.link_policy.same_mtime = false;
    if (r == "reach") o.link_policy.same_reach = false;
  }
  if (!a.relax.empty() && !o.hardlink) return cli::Fail("oans-apply", "--link-relax is for --link=hard only");
  if (deadline_s && !until.empty()) return cli::Fail("oans-apply", "give --deadline or --until, not both");
  if (!until.empty()) {
    auto secs = cli::SecondsUntil(until);
    if (!secs.ok()) return cli::Fail("oans-apply", secs.status().Prepend("--until"));
    deadline_s = *secs;
  }
  if (deadline_s) o.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  if (io_class == "idle") {
    if (Status s = cli::SetIdleIoClass(); !s.ok()) return cli::Fail("oans-apply", s);
  }
  if (o.dry_run) o.on_dry_run = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  return -1;
}

// Opens the journal of `plan`: PLAN.journal, unless --journal names another.
// Tells what an earlier run finished. There is none with --no-journal or --dry-run,
// nor for a plan read from standard input without --journal.
// Returns -1 to go on, or the exit code.
int OpenJournal(Args& a, const PlanReader& plan, bool from_stdin, std::unique_ptr<Journal>* journal) {
  ApplyOptions& o = a.o;
  std::string& journal_path = a.journal_path;
  const bool quiet = a.quiet;
  if (a.no_journal || o.dry_run || (from_stdin && journal_path.empty())) return -1;
  if (journal_path.empty()) journal_path = a.plan_path + ".journal";
  std::string notice;
  auto j = Journal::Open(journal_path, plan.header(), &notice);
  if (!j.ok()) return cli::Fail("oans-apply", j.status());
  *journal = std::move(*j);
  if (!notice.empty() && !quiet) std::fprintf(stderr, "oans-apply: %s\n", notice.c_str());
  if ((*journal)->done_count() && !quiet)
    std::fprintf(stderr, "oans-apply: resuming: %zu of %llu rounds were finished by an earlier run (%s)\n",
                 (*journal)->done_count(), (unsigned long long)plan.header().rounds, journal_path.c_str());
  o.journal = journal->get();
  o.link_log = journal->get();
  return -1;
}

// What to do next, after the figures: advice the figures cannot give.
void PrintAdvice(const ApplyStats& s) {
  if (s.rounds_to_retry)
    std::fputs(cli::WrapSummary("", {"rounds to retry met a passing problem (busy, no space, a writer, an I/O error)",
                                     "not journaled as done: run again with the same plan to retry them"})
                   .c_str(),
               stderr);
  if (s.interrupted)
    std::fprintf(stderr, "  %s; run again with the same plan to continue\n",
                 s.deadline_reached ? "deadline reached" : "stopped early");
}

}  // namespace

int main(int argc, char** argv) {
  oans::SetUpHeap();
  CLI::App app{
      "Execute a dedupe plan from oans-plan. Every file is re-opened without following symlinks\n"
      "and checked against the plan (filesystem UUID and subvolume, inode, size, mtime); files that changed\n"
      "are skipped and reported. Each round is read into the page cache first, then handed to\n"
      "FIDEDUPERANGE, which makes the kernel compare the bytes under lock: data that differs is\n"
      "never shared.\n"
      "The plan and the journal must be writable by no other user, in directories only root or you\n"
      "can change (or sticky, as /tmp); keep plans in a root-only directory such as /var/lib/oans.\n"
      "\n"
      "Examples:\n"
      "  oans-apply plan.capnp                             dedupe (a journal beside it allows resuming)\n"
      "  oans-apply --dry-run plan.capnp | head            what it would do\n"
      "  oans-apply --until 06:00 --max-rate 200M --io-class idle plan.capnp   a maintenance window\n"
      "  oans-apply --link=hard plan.capnp                 hardlinks on ext4 (identical files only)",
      "oans-apply"};
  app.set_version_flag("--version", ToolVersionString("oans-apply"));
  Args a;
  cli::AddApplyOptions(app, &a);
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  std::atomic<bool> stop{false};
  if (int rc = Complete(a, &stop); rc >= 0) return rc;
  ApplyOptions& o = a.o;

  // The whole plan is checked before any file is touched; a pipe is buffered for that.
  // No other user may have been able to write a plan file (lib/base/trust.h).
  // It is opened once and read through that descriptor from then on.
  const bool from_stdin = a.plan_path == "-";
  auto pinned = from_stdin ? SpoolStdin() : OpenTrustedPlan(a.plan_path);
  if (!pinned.ok()) return cli::Fail("oans-apply", pinned.status());
  auto plan = PlanReader::Open(*pinned);
  if (!plan.ok()) return cli::Fail("oans-apply", plan.status());
  // On a spinning disk, the directories above the plan's files, for apply to list first
  // (dir_ahead.h): gathered while the plan is checked.
  PlanDirectories dirs;
  std::function<void(const PlanRound&)> gather;
  if (WantsPlanDirectories(o, (*plan)->header())) gather = [&dirs](const PlanRound& r) { dirs.Add(r); };
  if (Status v = ValidatePlan(*pinned, gather); !v.ok()) return cli::Fail("oans-apply", v);
  std::vector<std::string> directories = dirs.Take();
  o.directories = &directories;
  // A filesystem that cannot share data as asked is told once, before any work.
  if (Status can = CheckPlanCanShare((*plan)->header(), o.hardlink); !can.ok()) return cli::Fail("oans-apply", can);
  std::unique_ptr<Journal> journal;
  if (int rc = OpenJournal(a, **plan, from_stdin, &journal); rc >= 0) return rc;
  if (o.hardlink && !o.dry_run && !o.journal)
    return cli::Fail("oans-apply",
                     "--link=hard needs a journal, where it records the hidden link names it makes so that a run "
                     "killed midway is cleaned up by the next one; drop --no-journal (or give --journal FILE for a "
                     "plan read from standard input)");
  cli::ProgressMode mode;
  cli::ParseProgressMode(a.progress, &mode);
  cli::ProgressRenderer renderer("oans-apply", mode, a.quiet);
  if (dirs.over()) renderer.Notice("not listing the plan's directories ahead: their paths take more than 256 MiB");
  ApplyStats s;
  Status st = RunApply(DefaultSys(), **plan, o, &renderer, &s);
  renderer.Finish();
  if (!st.ok() && st.code() != Status::Code::kInterrupted) {
    if (s.rounds_done > 0)
      std::fprintf(stderr, "oans-apply: %llu of %llu rounds were done before the error; %s deduped\n",
                   (unsigned long long)s.rounds_done, (unsigned long long)s.rounds,
                   FormatSize(s.bytes_deduped).c_str());
    return cli::Fail("oans-apply", st);
  }
  s.dry_run = o.dry_run;
  s.seconds = renderer.ElapsedSeconds();
  const bool text = !a.quiet || s.bytes_skipped() || s.interrupted;
  cli::EmitFigures({.tool = "oans-apply", .summary_file = a.summary_file, .json = a.json, .text = text,
                    .stdout_has_output = o.dry_run},
                   ApplyFigures(), s);
  if (text && !a.json) PrintAdvice(s);
  if (s.interrupted) return cli::kStopped;
  if (o.hardlink && s.files_linked == 0 && s.bytes_skipped()) return cli::kPartial;
  return (s.bytes_skipped() || s.files_changed || s.errors) ? cli::kPartial : cli::kOk;
}
