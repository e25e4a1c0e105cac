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

#include "lib/base/units.h"
#include "lib/base/version.h"
#include "lib/run/run.h"
#include "lib/run/spawn.h"
#include "lib/run/state_dir.h"
#include "tools/common/cli.h"

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
    "  scan ROOT...    walk trees and write an extent index            (oans-scan)\n"
    "  plan [INDEX...] find duplicate data not yet shared, write a plan (oans-plan)\n"
    "  apply PLAN      execute a dedupe plan with FIDEDUPERANGE         (oans-apply)\n"
    "  apply [OPTION=VALUE...]  without PLAN: the newest plan of oans run, under its lock,\n"
    "                  with its stored apply options (state directory as for oans run;\n"
    "                  $OANS_STATE_DIR chooses one)\n"
    "  cat FILE        print an index or a plan as JSON lines           (oans-cat)\n"
    "  diff OLD NEW    list what changed between two indexes            (oans-diff)\n"
    "\n"
    "`oans COMMAND --help` describes each command.\n"
    "\n"
    "Examples:\n"
    "  oans run /srv/data                      the nightly job: scan, plan, apply\n"
    "  oans run                                the same again, with the stored roots and options\n"
    "  oans run --plan-only /srv/data          plan tonight; `oans apply PLAN` in the window\n"
    "  oans scan /srv/data | oans plan --stats > plan.capnp\n"
    "  oans plan --format dirs --top 20 data.idx   where the duplicates are\n"
    "  oans apply --until 06:00 plan.capnp     apply until 06:00, resume next time\n"
    "  oans apply --until=06:00                the newest plan of oans run --plan-only\n"
    "\n";

// Runs oans-TOOL from this program's directory with the remaining arguments.
int ExecTool(const std::string& tool, int argc, char** argv) {
  auto dir = ExecutableDir();
  if (!dir.ok()) return cli::Fail("oans", dir.status());
  std::string path = *dir + "/oans-" + tool, name = "oans-" + tool;
  std::vector<char*> args = {name.data()};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
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
  std::fprintf(stderr, "%s\n", line.c_str());
}

int RunMain(int argc, char** argv) {
  CLI::App app{
      "One generation of the nightly job: scan ROOT... (reusing the previous generation's index),\n"
      "plan, and apply, keeping generations in a state directory (default /var/lib/oans/NAME, one\n"
      "per set of roots; $OANS_STATE_BASE replaces /var/lib/oans). Without ROOT, the roots and\n"
      "options stored by the last run with ROOT are replayed. The newest --keep generations are\n"
      "kept; older ones are removed once a new one is complete. Two runs on one state directory\n"
      "never overlap: the second is refused. The state directory must be owned by this user,\n"
      "writable by no one else, and on neither tmpfs nor a filesystem being deduped.\n"
      "Examples:\n"
      "  oans run /srv/data /home                  scan, plan and apply both trees\n"
      "  oans run                                  the same again, replaying roots and options\n"
      "  oans run --plan-only /srv/data            plan only; apply the printed plan later with\n"
      "                                            oans apply --until 06:00 PLAN\n"
      "  oans run --exclude '*.tmp' --max-rate 200M --until 06:00 /srv/data\n"
      "  oans run --apply-option=--link=hard /srv/ext4data   hardlinks on ext4\n"
      "  oans run --state-dir /var/lib/oans/media /srv/media",
      "oans run"};
  app.set_version_flag("--version", ToolVersionString("oans-run"));
  RunRequest req;
  RunConfig& c = req.config;
  std::string progress;
  std::vector<std::string> excludes, scan_options;
  uint64_t max_rate = 0, size_value = 0, deadline = 0;
  std::string until, io_class;
  bool quiet = false;
  app.add_option("roots", req.roots, "Directories to dedupe (none: the stored ones)")->type_name("ROOT");
  app.add_option("--state-dir", req.state_dir, "State directory (default /var/lib/oans/NAME for these roots)")
      ->type_name("DIR");
  std::vector<CLI::Option*> stored = {
      app.add_option("--keep", c.keep, "Generations to keep (default 3)")->check(CLI::Range(1, 9999)),
      app.add_flag("--plan-only", c.plan_only, "Scan and plan, do not apply (oans apply PLAN later)"),
      app.add_option("--exclude", excludes, "oans-scan --exclude GLOB; repeatable")->type_name("GLOB")
          ->allow_extra_args(false),
      cli::AddSize(app, "--min-size", &size_value, "oans-scan --min-size: skip files smaller than SIZE"),
      cli::AddSize(app, "--max-rate", &max_rate, "oans-apply --max-rate: limit reads to RATE bytes per second"),
      app.add_option("--until", until, "oans-apply --until HH:MM: stop cleanly after the round at HH:MM")
          ->type_name("HH:MM"),
      cli::AddDuration(app, "--deadline", &deadline, "oans-apply --deadline: stop cleanly after DURATION"),
      app.add_option("--io-class", io_class, "oans-apply --io-class: best-effort or idle")
          ->check(CLI::IsMember({"best-effort", "idle"})),
      app.add_option("--scan-option", scan_options, "Any other argument for oans-scan; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
      app.add_option("--plan-option", c.plan_args, "An argument for oans-plan; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
      app.add_option("--apply-option", c.apply_args, "An argument for oans-apply; repeatable")->type_name("ARG")
          ->allow_extra_args(false),
  };
  app.add_option("--progress", progress, "Progress of each tool on stderr: auto, tty, json or none (not stored)")
      ->check(CLI::IsMember({"auto", "tty", "json", "none"}));
  app.add_flag("-q,--quiet", quiet, "Print only errors (not stored)");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (req.roots.empty())
    for (auto* o : stored)
      if (o->count() > 0)
        return cli::Fail("oans run", o->get_name() + " is stored with the roots: give ROOT... with it to change them");
  for (const auto& e : excludes) c.scan_args.insert(c.scan_args.end(), {"--exclude", e});
  c.scan_args.insert(c.scan_args.end(), scan_options.begin(), scan_options.end());
  if (size_value) c.scan_args.insert(c.scan_args.end(), {"--min-size", std::to_string(size_value)});
  if (max_rate) c.apply_args.insert(c.apply_args.end(), {"--max-rate", std::to_string(max_rate)});
  if (!until.empty()) c.apply_args.insert(c.apply_args.end(), {"--until", until});
  if (deadline) c.apply_args.insert(c.apply_args.end(), {"--deadline", std::to_string(deadline) + "s"});
  if (!io_class.empty()) c.apply_args.insert(c.apply_args.end(), {"--io-class", io_class});
  if (quiet) req.per_run_args.push_back("--quiet");
  if (!progress.empty()) req.per_run_args.push_back("--progress=" + progress);
  if (const char* base = std::getenv("OANS_STATE_BASE"); base && *base) req.state_base = base;
  auto dir = ExecutableDir();
  if (!dir.ok()) return cli::Fail("oans run", dir.status());
  req.tool_dir = *dir;

  RunOutcome out = RunGeneration(req);
  if (out.exit_code == cli::kFailure && out.generation == 0) return cli::Fail("oans run", out.message);
  PrintOutcome(out, quiet);
  return out.exit_code;
}

// `oans apply` with options only (no PLAN, no --help/--version): the newest plan of oans run.
bool ApplyNewestRequested(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.empty() || a[0] != '-' || a == "-" || a == "--" || a == "--help" || a == "-h" || a == "--version")
      return false;
  }
  return true;
}

int ApplyNewestMain(int argc, char** argv) {
  RunRequest req;
  req.apply_newest = true;
  for (int i = 2; i < argc; ++i) req.extra_apply_args.push_back(argv[i]);
  if (const char* base = std::getenv("OANS_STATE_BASE"); base && *base) req.state_base = base;
  if (const char* dir = std::getenv("OANS_STATE_DIR"); dir && *dir) req.state_dir = dir;
  auto dir = ExecutableDir();
  if (!dir.ok()) return cli::Fail("oans apply", dir.status());
  req.tool_dir = *dir;
  RunOutcome out = RunGeneration(req);
  if (out.exit_code == cli::kFailure && !out.applied && out.plan.empty()) return cli::Fail("oans apply", out.message);
  PrintOutcome(out, true);
  return out.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
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
  if (!std::strcmp(argv[1], "apply") && ApplyNewestRequested(argc, argv)) return ApplyNewestMain(argc, argv);
  for (const char* t : kTools)
    if (!std::strcmp(argv[1], t)) return ExecTool(t, argc, argv);
  if (!std::strcmp(argv[1], "run")) return RunMain(argc - 1, argv + 1);
  return cli::Fail("oans", std::string("unknown command \"") + argv[1] +
                               "\"; the commands are run, scan, plan, apply, cat and diff (oans --help)");
}
