// oans: the front command. `oans scan|plan|apply|cat|diff ARGS` runs the sibling binary
// oans-TOOL (git style); `oans run [ROOT...]` runs one generation of the nightly job
// (lib/run/run.h).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/base/heap.h"
#include "lib/base/units.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "lib/base/json.h"
#include "lib/run/metrics.h"
#include "lib/run/record.h"
#include "lib/run/run.h"
#include "lib/run/spawn.h"
#include "lib/run/state_dir.h"
#include "tools/apply/options.h"
#include "tools/oans/status.h"
#include "tools/common/cli.h"
#include "tools/common/progress.h"
#include "tools/common/summary.h"

using namespace oans;

namespace {

const char* const kTools[] = {"scan", "plan", "apply", "cat", "diff"};

const char* kUsage =
    "oans: reclaim space on btrfs and XFS by sharing identical data.\n"
    "Usage: oans COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  run [ROOT...]   scan (reusing the previous generation), plan and apply, keeping\n"
    "                  generations in a state directory; without ROOT, replay the last roots\n"
    "  status [ROOT...]  the last generations of oans run and a run in progress\n"
    "  scan ROOT...    walk trees and write an extent index            (oans-scan)\n"
    "  plan [INDEX...]  find duplicate data not yet shared, write a plan (oans-plan)\n"
    "  apply PLAN      execute a dedupe plan with FIDEDUPERANGE         (oans-apply)\n"
    "  apply [OPTION...]  without PLAN: the newest plan of oans run, under its lock, with\n"
    "                  its stored apply options, then those given (state directory as for\n"
    "                  oans run; --state-dir DIR or $OANS_STATE_DIR chooses one)\n"
    "  cat FILE        print an index or a plan as JSON lines           (oans-cat)\n"
    "  diff OLD NEW    list what changed between two indexes            (oans-diff)\n"
    "\n"
    "`oans COMMAND --help` describes each command.\n"
    "\n"
    "Examples:\n"
    "  oans run /srv/data                      the nightly job: scan, plan, apply\n"
    "  oans run                                the same again, with the stored roots and options\n"
    "  oans run --plan-only /srv/data          plan tonight; `oans apply PLAN` in the window\n"
    "  oans scan /srv/data | oans plan --stats > plan.capnp   by hand: a plan, and what it\n"
    "                                          would reclaim\n"
    "  oans plan --format dirs --top 20 data.idx   where the duplicates are\n"
    "  oans apply --until 06:00 plan.capnp     apply until 06:00, resume next time\n"
    "  oans apply --until 06:00                the newest plan of oans run --plan-only\n"
    "  oans run --show-config                  the roots and options oans run stored\n"
    "  oans status                             what the last nights did, and a run going on\n"
    "\n";

// Runs oans-TOOL from this program's directory with argv[first...].
int ExecTool(const std::string& tool, int argc, char** argv, int first) {
  auto dir = ExecutableDir();
  if (!dir.ok()) return cli::Fail("oans", dir.status());
  std::string path = *dir + "/oans-" + tool, name = "oans-" + tool;
  std::vector<char*> args = {name.data()};
  for (int i = first; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  return cli::Fail("oans", Status::Io("running " + path + " (it is installed beside oans)", errno));
}

// One line: the generation, where, whether applied, what was removed, and the message.
void PrintOutcome(const RunOutcome& out, bool quiet) {
  if (out.message.empty() && quiet) return;
  std::string line = "oans run: generation " + std::to_string(out.generation) + " in " + out.state_dir;
  if (out.applied) line += ", applied";
  for (size_t i = 0; i < out.removed.size(); ++i)
    line += (i ? ", " : "; removed generation ") + std::to_string(out.removed[i]);
  if (!out.message.empty()) line += ": " + out.message;
  std::fputs(cli::FitLine(STDERR_FILENO, line).c_str(), stderr);
}

// Prints a run's outcome and gives its exit code; a run refused before its first step
// (an error, or the lock held by another run) is one error line.
int Finish(const std::string& tool, const RunOutcome& out, bool refused, bool quiet) {
  if (refused && (out.exit_code == cli::kFailure || out.exit_code == cli::kBusy)) {
    cli::Fail(tool, out.message);
    return out.exit_code;
  }
  PrintOutcome(out, quiet);
  return out.exit_code;
}

// What --json prints: the run's record, the one oans status --json shows; a run refused
// before it had one, its exit code and why.
Json RunJson(const RunOutcome& out) {
  if (out.record.is_object()) return out.record;
  return {{"state_dir", JsonText(out.state_dir)}, {"generation", Json()}, {"exit_code", out.exit_code},
          {"message", JsonText(out.message)}};
}

// Fills the request's state base from $OANS_STATE_BASE and its tool directory.
Status LocateTools(RunRequest* req) {
  if (const char* base = std::getenv("OANS_STATE_BASE"); base && *base) req->state_base = base;
  auto dir = ExecutableDir();
  if (!dir.ok()) return dir.status();
  req->tool_dir = *dir;
  return Status::Ok();
}

// The options of oans run that are not a RunRequest field.
struct RunArgs {
  std::vector<std::string> excludes, presets, scan_options;
  uint64_t max_rate = 0, min_size = 0, deadline = 0, wait_lock = 0;
  std::string until, io_class, link, progress, metrics_file;
  bool quiet = false, show_config = false, same_owner = false, json = false;
  std::string snapshots;  // oans-plan --snapshots
  std::vector<CLI::Option*> given;  // every option but --state-dir, to refuse with --show-config
};

const char* kStoredGroup = "Stored with ROOT (without ROOT: for this run only, after the stored ones)";
const char* kPerRunGroup = "For this run only (never stored)";

// The options stored with the roots.
void AddStoredOptions(CLI::App& app, RunRequest* req, RunArgs* a) {
  RunConfig& c = req->config;
  a->given = {
      app.add_option("--keep", c.keep, "Generations to keep (default 3)")->check(CLI::Range(1, 9999)),
      app.add_option("--exclude", a->excludes, "oans-scan --exclude GLOB; repeatable")->type_name("GLOB")
          ->allow_extra_args(false),
      app.add_option("--exclude-preset", a->presets, "oans-scan --exclude-preset NAME (nas); repeatable")
          ->type_name("NAME")
          ->check(CLI::IsMember({"nas"}))
          ->allow_extra_args(false),
      cli::AddSize(app, "--min-size", &a->min_size, "oans-scan --min-size: skip files smaller than SIZE"),
      cli::AddSize(app, "--max-rate", &a->max_rate, "oans-apply --max-rate: limit reads to RATE bytes per second"),
      app.add_option("--io-class", a->io_class, "oans-apply --io-class: best-effort or idle")
          ->check(CLI::IsMember({"best-effort", "idle"})),
      app.add_option("--link", a->link, "oans-apply --link: reflink (default) or hard (hardlinks, for ext4)")
          ->check(CLI::IsMember({"reflink", "hard"})),
      app.add_option("--snapshots", a->snapshots,
                     "oans-plan --snapshots: share into read-only snapshots: auto (default), all or none")
          ->check(CLI::IsMember({"auto", "all", "none"})),
      app.add_flag("--same-owner", a->same_owner,
                   "oans-plan --same-owner: pair only files of one owner (trees that users who do not trust each "
                   "other write)"),
      app.add_option("--scan-option", a->scan_options, "Any other argument for oans-scan; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
      app.add_option("--plan-option", c.plan_args, "An argument for oans-plan; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
      app.add_option("--apply-option", c.apply_args, "An argument for oans-apply; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
  };
  for (auto* o : a->given) o->group(kStoredGroup);
}

// The options of one run, never stored.
void AddPerRunOptions(CLI::App& app, RunRequest* req, RunArgs* a) {
  const std::vector<CLI::Option*> per_run = {
      app.add_flag("--plan-only", req->plan_only, "Scan and plan, do not apply (oans apply PLAN later)"),
      app.add_option("--until", a->until, "oans-apply --until HH:MM: stop cleanly after the round at HH:MM")
          ->type_name("HH:MM"),
      cli::AddDuration(app, "--deadline", &a->deadline, "oans-apply --deadline: stop cleanly after DURATION"),
      app.add_option("--progress", a->progress, "Progress of each tool on stderr: auto, tty, json or none")
          ->check(CLI::IsMember({"auto", "tty", "json", "none"})),
      app.add_flag("-q,--quiet", a->quiet, "Print only errors"),
      app.add_flag("--json", a->json,
                   "Print the run's record (as oans status --json shows it) as one JSON line on stdout"),
      cli::AddDuration(app, "--wait-lock", &a->wait_lock,
                       "When another run holds the state directory, wait for it up to DURATION (default: "
                       "refuse at once, exit 4)"),
      app.add_option("--metrics-file", a->metrics_file,
                     "Write the run's metrics to FILE (Prometheus text format, for node_exporter's textfile "
                     "collector; replaced atomically, mode 0644)")
          ->type_name("FILE"),
  };
  for (auto* o : per_run) o->group(kPerRunGroup);
  a->given.insert(a->given.end(), per_run.begin(), per_run.end());
  app.add_flag("--show-config", a->show_config,
               "Print the roots and options stored in the state directory (of ROOT..., --state-dir, or the one "
               "there is) and do nothing else");
}

// The parsed options into the request; an error for what cannot be run.
Status Settle(const RunArgs& a, RunRequest* req) {
  RunConfig& c = req->config;
  for (const auto& arg : c.apply_args)
    if (IsPerRunApplyOption(arg))
      return Status::Invalid("--apply-option=" + arg + ": give " + arg.substr(0, arg.find('=')) +
                             " to oans run itself; it applies to this run only and is never stored");
  if (!a.until.empty()) {
    auto secs = cli::SecondsUntil(a.until);  // refused now rather than after the scan
    if (!secs.ok()) return secs.status().Prepend("--until");
    req->extra_apply_args.insert(req->extra_apply_args.end(), {"--until", a.until});
  }
  if (a.deadline) req->extra_apply_args.insert(req->extra_apply_args.end(), {"--deadline", std::to_string(a.deadline) + "s"});
  for (const auto& e : a.excludes) c.scan_args.insert(c.scan_args.end(), {"--exclude", e});
  for (const auto& p : a.presets) c.scan_args.insert(c.scan_args.end(), {"--exclude-preset", p});
  c.scan_args.insert(c.scan_args.end(), a.scan_options.begin(), a.scan_options.end());
  if (a.min_size) c.scan_args.insert(c.scan_args.end(), {"--min-size", std::to_string(a.min_size)});
  if (a.max_rate) c.apply_args.insert(c.apply_args.end(), {"--max-rate", std::to_string(a.max_rate)});
  if (!a.io_class.empty()) c.apply_args.insert(c.apply_args.end(), {"--io-class", a.io_class});
  if (!a.link.empty()) c.apply_args.insert(c.apply_args.end(), {"--link", a.link});
  if (a.same_owner) c.plan_args.push_back("--same-owner");
  if (!a.snapshots.empty()) c.plan_args.insert(c.plan_args.end(), {"--snapshots", a.snapshots});
  if (a.quiet) req->per_run_args.push_back("--quiet");
  req->wait_lock_seconds = a.wait_lock;
  if (!a.progress.empty()) req->per_run_args.push_back("--progress=" + a.progress);
  return LocateTools(req);
}

const char* kRunHelp =
    "One generation of the nightly job: scan ROOT... (reusing the previous generation's index),\n"
    "plan, and apply, keeping generations in a state directory (default /var/lib/oans/NAME, one\n"
    "per set of roots; $OANS_STATE_BASE replaces /var/lib/oans). Given with ROOT, the options\n"
    "of the first group below are stored with the roots (replacing what was stored); without\n"
    "ROOT, the stored roots and options are replayed, and options given apply to this run only,\n"
    "after the stored ones: an option's last value counts, lists such as --exclude add up.\n"
    "The options of the second group are never stored. The newest --keep generations are\n"
    "kept; older ones are removed once a new one is complete. Two runs on one state directory\n"
    "never overlap: the second is refused (exit 4), or waits with --wait-lock. The state\n"
    "directory must be owned by this user, writable by no one else, and on neither tmpfs nor\n"
    "a filesystem being deduped. Roots on a filesystem that cannot share data (ext4, tmpfs,\n"
    "XFS without reflink) are refused before the scan unless --link=hard is stored or given.\n"
    "\n"
    "Examples:\n"
    "  oans run /srv/data /home                  scan, plan and apply both trees\n"
    "  oans run                                  the same again, replaying roots and options\n"
    "  oans run --max-rate 100M                  the same, reading at most 100 MB/s this time\n"
    "  oans run --show-config                    what is stored\n"
    "  oans run --plan-only /srv/data            plan only; apply the printed plan later with\n"
    "                                            oans apply --until 06:00 PLAN\n"
    "  oans run --exclude '*.tmp' --max-rate 200M --until 06:00 /srv/data   stores the roots, the\n"
    "                                            exclude and the rate; stops at 06:00\n"
    "  oans run --link=hard /srv/ext4data        hardlinks on ext4\n"
    "  oans run --metrics-file /var/lib/prometheus/node-exporter/oans.prom   metrics for\n"
    "                                            node_exporter's textfile collector\n"
    "  oans run --state-dir /var/lib/oans/media /srv/media   a state directory of one's own";

int RunMain(int argc, char** argv) {
  CLI::App app{kRunHelp, "oans run"};
  app.set_version_flag("--version", ToolVersionString("oans-run"));
  RunRequest req;
  RunArgs a;
  app.add_option("roots", req.roots, "Directories to dedupe (none: the stored ones)")->type_name("ROOT");
  app.add_option("--state-dir", req.state_dir, "State directory (default /var/lib/oans/NAME for these roots)")
      ->type_name("DIR");
  AddStoredOptions(app, &req, &a);
  AddPerRunOptions(app, &req, &a);
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  req.keep_given = app.get_option("--keep")->count() > 0;
  if (a.show_config) {
    for (auto* o : a.given)
      if (o->count() > 0) return cli::Fail("oans run", "--show-config takes no " + o->get_name() + "; only ROOT... or --state-dir");
    if (Status s = LocateTools(&req); !s.ok()) return cli::Fail("oans run", s);
    auto text = ShowRunConfig(req);
    if (!text.ok()) return cli::Fail("oans run", text.status());
    std::fputs(text->c_str(), stdout);
    return cli::kOk;
  }
  if (Status s = Settle(a, &req); !s.ok()) return cli::Fail("oans run", s);
  req.note = [quiet = a.quiet](const std::string& n) {
    if (!quiet) std::fprintf(stderr, "oans run: note: %s\n", n.c_str());
  };
  RunOutcome out = RunGeneration(req);
  int rc = Finish("oans run", out, out.generation == 0, a.quiet);
  if (a.json) PrintJsonLine(stdout, RunJson(out));
  // A run refused for the lock leaves the file to the run that holds it.
  if (!a.metrics_file.empty() && rc != cli::kBusy)
    if (Status s = WriteRunMetrics(a.metrics_file, out); !s.ok()) {
      cli::Fail("oans run", s.Prepend("--metrics-file"));
      return rc == cli::kOk || rc == 1 ? cli::kFailure : rc;
    }
  return rc;
}

// Runs oans-TOOL from this program's directory with these arguments.
int ExecToolArgs(const std::string& tool, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return ExecTool(tool, int(args.size()) - 1, args.data(), 1);
}

// `oans apply ARGS`: oans-apply's options (and --state-dir); with a PLAN, oans-apply
// itself; without, the newest plan of oans run, under its lock, with the stored apply
// options followed by those given.
int ApplyMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 2, argv + argc), passed = {"oans apply"};
  std::string state_dir;
  for (const auto& a : args)
    if (a == "--") break;
    else if (a == "--help" || a == "-h" || a == "--version") return ExecTool("apply", argc, argv, 2);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      passed.insert(passed.end(), args.begin() + long(i), args.end());
      break;
    }
    if (args[i] == "--state-dir" && i + 1 < args.size()) state_dir = args[++i];
    else if (args[i].rfind("--state-dir=", 0) == 0) state_dir = args[i].substr(12);
    else passed.push_back(args[i]);
  }
  CLI::App app{"", "oans apply"};
  cli::ApplyCommandLine cl;
  cli::AddApplyOptions(app, &cl);
  app.get_option("plan")->required(false);
  std::vector<char*> cargs;
  for (auto& p : passed) cargs.push_back(p.data());
  if (int rc = cli::Parse(app, int(cargs.size()), cargs.data()); rc >= 0) return rc;
  if (!cl.plan_path.empty()) {
    if (!state_dir.empty())
      return cli::Fail("oans apply", "--state-dir chooses the newest plan of oans run when no PLAN is given; "
                                     "give PLAN or --state-dir, not both");
    passed[0] = "oans-apply";
    return ExecToolArgs("apply", passed);
  }
  RunRequest req;
  req.apply_newest = true;
  req.extra_apply_args.assign(passed.begin() + 1, passed.end());
  if (const char* dir = std::getenv("OANS_STATE_DIR"); dir && *dir) req.state_dir = dir;
  if (!state_dir.empty()) req.state_dir = state_dir;
  if (Status s = LocateTools(&req); !s.ok()) return cli::Fail("oans apply", s);
  RunOutcome out = RunGeneration(req);
  return Finish("oans apply", out, !out.applied && out.plan.empty(), true);
}

// `oans status`: the last generations of each state directory, and a run in progress.
int StatusMain(int argc, char** argv) {
  CLI::App app{"The last generations of oans run (when each ran, how long each step took and its exit code,\n"
               "files scanned and read, bytes planned, deduped and skipped by reason) and a run in\n"
               "progress (its pid and step), for the state directory of ROOT..., --state-dir DIR, or every\n"
               "one under /var/lib/oans ($OANS_STATE_BASE). --json: one JSON object per state directory\n"
               "(docs/format.md, \"Run records\").",
               "oans status"};
  app.set_version_flag("--version", ToolVersionString("oans-status"));
  RunRequest req;
  size_t last = 3;
  bool json = false;
  app.add_option("roots", req.roots, "The roots of a state directory")->type_name("ROOT");
  app.add_option("--state-dir", req.state_dir, "State directory")->type_name("DIR");
  app.add_option("--last", last, "Generations shown per state directory (default 3)")->check(CLI::Range(1, 9999));
  app.add_flag("--json", json, "One JSON object per state directory on stdout");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (Status s = LocateTools(&req); !s.ok()) return cli::Fail("oans status", s);
  std::vector<std::string> dirs;
  if (!req.roots.empty() || !req.state_dir.empty()) {
    auto roots = req.roots.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                                   : CanonicalRoots(req.roots);
    if (!roots.ok()) return cli::Fail("oans status", roots.status());
    auto dir = ChooseStateDir(req, *roots);
    if (!dir.ok()) return cli::Fail("oans status", dir.status());
    dirs.push_back(*dir);
  } else {
    dirs = StoredStateDirs(req.state_base);
    if (dirs.empty() && !json) std::printf("no state directory of oans run under %s yet\n", req.state_base.c_str());
  }
  for (const auto& d : dirs) {
    auto s = StatusOf(d, last);
    if (!s.ok()) return cli::Fail("oans status", s.status());
    if (json) PrintJsonLine(stdout, *s);
    else cli::PrintStatus(*s);
  }
  return cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  oans::SetUpHeap();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    FILE* f = argc < 2 ? stderr : stdout;  // no command is an error: usage on stderr
    std::fputs(kUsage, f);
    std::fputs(cli::ExitCodesHelp().c_str(), f);
    std::fputs("\n", f);
    return argc < 2 ? cli::kFailure : cli::kOk;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("%s\n", ToolVersionString("oans").c_str());
    return cli::kOk;
  }
  if (!std::strcmp(argv[1], "apply")) return ApplyMain(argc, argv);
  for (const char* t : kTools)
    if (!std::strcmp(argv[1], t)) return ExecTool(t, argc, argv, 2);
  if (!std::strcmp(argv[1], "run")) return RunMain(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "status")) return StatusMain(argc - 1, argv + 1);
  return cli::Fail("oans", std::string("unknown command \"") + argv[1] +
                               "\"; the commands are run, status, scan, plan, apply, cat and diff (oans --help)");
}
