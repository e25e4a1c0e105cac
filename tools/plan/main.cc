// oans-plan [INDEX...]: find duplicate data that is not yet shared and write a dedupe plan.
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <cstdlib>

#include "lib/scan/dupe_list.h"
#include "lib/base/heap.h"
#include "lib/base/spill.h"
#include "lib/base/sys.h"
#include "lib/plan/dirs_report.h"
#include "lib/plan/plan_figures.h"
#include "lib/plan/planner.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/common/cli.h"
#include "tools/common/progress.h"
#include "tools/common/summary.h"
#include "tools/plan/report.h"

using namespace oans;
using oans::cli::PrintReport;
using oans::cli::WriteReport;

namespace {

// A signal stopped the planner: nothing was written (or committed).
int Stopped() {
  std::fprintf(stderr, "oans-plan: stopped; no plan written\n");
  return cli::kStopped;
}

// The command line: the library's options and what only the tool needs.
struct Args {
  PlanOptions o;
  std::string output = "-", progress = "auto", format = "plan";
  std::string fdupes, summary_file, snapshots = "auto";
  int64_t top = 0;  // signed, so that a negative number is refused by name, not wrapped
  bool stats_flag = false, json = false, quiet = false, no_blocks = false;
};

void AddOptions(CLI::App& app, Args& a) {
  PlanOptions& o = a.o;
  std::string &output = a.output, &progress = a.progress, &format = a.format, &fdupes = a.fdupes;
  bool &stats_flag = a.stats_flag, &json = a.json, &quiet = a.quiet, &no_blocks = a.no_blocks;
  int64_t& top = a.top;
  app.add_option("indexes", o.indexes, "Index files from oans-scan ('-' for standard input)")->type_name("INDEX");
  app.add_option("-o,--output", output, "Write the plan to FILE (atomically) instead of standard output")
      ->type_name("FILE");
  cli::AddSize(app, "--round-size", &o.round_size,
               "Bytes read per round, sources plus destinations (default 32M; 48M when an index says its files "
               "are on a spinning disk; at least 1M)");
  app.add_option("--from-list", fdupes,
                 "Plan from a duplicate list of fdupes or jdupes (paths, a blank line between groups) instead of "
                 "indexes; the kernel still compares every byte before sharing")
      ->type_name("FILE");
  app.add_option("--since", o.since, "Plan only duplicate groups involving a file new or changed since index OLD")
      ->type_name("OLD");
  app.add_flag("--since-join", o.since_join,
               "With --since: read OLD and join it with the index by inode even when the index lists its own "
               "changes since OLD (as a scan following btrfs changes writes it); the same plan, slower");
  cli::AddSize(app, "--memory", &o.memory,
               "Memory for the planner's records (default 512M, at least 16M); past it, sorted runs and file "
               "details go to temporary files, removed on exit");
  app.add_option("--temp-dir", o.temp_dir,
                 "Directory for those temporary files and the index made from --from-list (default $TMPDIR, else "
                 "/var/tmp)")
      ->type_name("DIR");
  app.add_flag("--whole-files-only", no_blocks, "Plan whole-file duplicates only, not partial (block) duplicates");
  app.add_flag("--same-owner", o.same_owner,
               "Pair only files of one owner: on a tree other users write, sharing data across owners tells "
               "a user what another user's file holds (docs/reliability.md)");
  cli::AddSize(app, "--min-run", &o.min_run,
               "Shortest partial duplicate planned from 4 KiB sector sums, a multiple of 4K (default 64K): "
               "shorter runs would split extents into slivers for little space (a shorter run that replaces whole "
               "extents splits nothing and is planned, as is one inside an extent a rewrite frees). On btrfs, where an extent stays allocated while any part of "
               "it is referenced, a partial duplicate is planned only where it leaves whole extents unreferenced");
  app.add_option("--max-rewrite", o.max_rewrite,
                 "On btrfs: free an extent of a destination that partial duplicates cover but for at most PERCENT "
                 "of its bytes (0-" + std::to_string(kMaxRewritePercent) + ", default 10; 0 never), by first copying "
                 "its other bytes into new extents; less is written than freed")
      ->type_name("PERCENT")
      ->check(CLI::Range(0u, kMaxRewritePercent));
  app.add_option("--snapshots", a.snapshots,
                 "On btrfs: share data into files of read-only snapshots: auto (default: only where the disk "
                 "bytes freed exceed twice the metadata the snapshots' rewritten tree leaves cost, so the net is "
                 "never negative), all, or none (the summary then tells what their expiry frees)")
      ->check(CLI::IsMember({"auto", "all", "none"}));
  app.add_option("--format", format,
                 "What to write: plan (default), or a report of the whole-file duplicate groups instead: text, "
                 "json (one group per line) or fdupes (paths, a blank line between groups); or the directories "
                 "holding them: dirs or dirs-json (see --top). In text and dirs, a newline in a name is written \\n "
                 "and a backslash \\\\; fdupes lists have no escapes, so a name with a newline is left out of them, "
                 "named on stderr, with exit code 1")
      ->check(CLI::IsMember({"plan", "text", "json", "fdupes", "dirs", "dirs-json"}));
  app.add_option("--top", top,
                 "With --format dirs or dirs-json (the directories with the most reclaimable bytes, added up the "
                 "tree like du, and their duplicate files): only the first N (default all)")
      ->type_name("N");
  app.add_flag("--stats", stats_flag, "Print every figure of the summary on stderr, one a line, zeros too");
  app.add_flag("--json", json, cli::kJsonHelp);
  cli::AddSummaryFile(app, &a.summary_file);
  app.add_option("--progress", progress, "Progress on stderr: auto, tty, json or none")
      ->check(CLI::IsMember({"auto", "tty", "json", "none"}));
  app.add_flag("-q,--quiet", quiet, "Print only errors");
  app.footer(cli::ExitCodesHelp());
}

// --from-list: the list becomes a temporary index, read like any other (in --temp-dir).
// Returns -1 to go on, or the exit code.
int IndexFromList(Args& a) {
  PlanOptions& o = a.o;
  const std::string& fdupes = a.fdupes;
  const bool quiet = a.quiet;
  if (!o.indexes.empty()) return cli::Fail("oans-plan", "give indexes or --from-list, not both");
  o.storage_unknown = true;  // no scan measured the list's files' storage
  std::string tmpl_path = TempDirectory(o.temp_dir) + "/oans-list-XXXXXX";
  std::vector<char> tmpl_buf(tmpl_path.begin(), tmpl_path.end() + 1);
  char* tmpl = tmpl_buf.data();
  int dirfd = mkstemp(tmpl);
  if (dirfd < 0) return cli::Fail("oans-plan", Status::Io("creating a temporary file", errno));
  close(dirfd);
  unlink(tmpl);
  auto idx = OutputFile::Open(tmpl);
  if (!idx.ok()) return cli::Fail("oans-plan", idx.status());
  cli::ProgressRenderer list_notices("oans-plan", cli::ProgressMode::kNone, quiet);
  DupeListStats ls;
  Status st = IndexFromDuplicateList(DefaultSys(), {fdupes == "-" ? "/dev/stdin" : fdupes, 128 * 1024}, idx->get(),
                                     &list_notices, &ls);
  if (st.ok()) st = (*idx)->Commit();
  if (!st.ok()) return cli::Fail("oans-plan", st);
  // Named only for the moment it takes to open it again: a kill leaves nothing behind.
  int fd = ::open(tmpl, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int e = errno;
  unlink(tmpl);
  if (fd < 0) return cli::Fail("oans-plan", Status::Io("reading back the index of " + fdupes, e));
  o.indexes.push_back(PinInput(fd, "the index made from " + fdupes));
  return -1;
}

// Checks what the parse could not, and completes the library's options.
// Returns -1 to go on, or the exit code.
int Complete(const CLI::App& app, Args& a, int argc, char** argv) {
  PlanOptions& o = a.o;
  if (app.count("--top") && a.top <= 0)
    return cli::Fail("oans-plan", "--top takes a positive number of directories, such as 20 (without it: all)");
  if (o.min_run == 0 || o.min_run % 4096 != 0)
    return cli::Fail("oans-plan", "--min-run must be a positive multiple of 4K, such as 64K");
  o.snapshots = a.snapshots == "all"    ? SnapshotPolicy::kAll
                : a.snapshots == "none" ? SnapshotPolicy::kNone
                                        : SnapshotPolicy::kAuto;
  if (!a.fdupes.empty())
    if (int rc = IndexFromList(a); rc >= 0) return rc;
  if (o.memory < (16u << 20)) return cli::Fail("oans-plan", "--memory must be at least 16M");
  // 0 is the library's "by the storage"; given, a size must be one.
  if (app.count("--round-size") && o.round_size < (1u << 20))
    return cli::Fail("oans-plan", "--round-size must be at least 1M");
  if (o.indexes.empty()) o.indexes.push_back("-");
  // With --since an index is read more than once, its header first.
  // Standard input is kept in memory for that.
  if (!o.since.empty())
    for (auto& path : o.indexes)
      if (path == "-") {
        auto spooled = SpoolStdin();
        if (!spooled.ok()) return cli::Fail("oans-plan", spooled.status());
        path = *spooled;
      }
  o.blocks = !a.no_blocks;
  o.command_line = cli::Argv(argc, argv);
  return -1;
}

// Plans, and writes the plan or the report; returns -1 when done, or the exit code.
int Plan(const Args& a, cli::ProgressRenderer& renderer, PlanStats* stats, int* report_rc) {
  const PlanOptions& o = a.o;
  const std::string &format = a.format, &output = a.output;
  const size_t top = size_t(a.top);
  PlanStats& s = *stats;
  if (format != "plan") {
    std::vector<GroupReport> groups;
    Status st = RunPlan(o, nullptr, &renderer, &s, &groups);
    renderer.Finish();
    if (st.code() == Status::Code::kInterrupted) return Stopped();
    if (!st.ok()) return cli::Fail("oans-plan", st);
    size_t left_out = 0;
    auto print = [&](FILE* f) -> size_t {
      if (format == "dirs" || format == "dirs-json") {
        auto dirs = DirsReport(groups, top);
        std::fputs((format == "dirs" ? DirsText(dirs) : DirsJson(dirs)).c_str(), f);
        return 0;
      }
      return PrintReport(f, format, groups);
    };
    if (Status w = WriteReport(output, print, &left_out); !w.ok()) return cli::Fail("oans-plan", w);
    if (left_out) *report_rc = cli::kPartial;
  } else {
    auto out = OutputFile::Open(output);
    if (!out.ok()) return cli::Fail("oans-plan", out.status());
    Status st = RunPlan(o, out->get(), &renderer, &s);
    renderer.Finish();
    if (st.code() == Status::Code::kInterrupted) return Stopped();  // the temporary output goes with `out`
    if (!st.ok()) return cli::Fail("oans-plan", st);
    if (Status c = (*out)->Commit(); !c.ok()) return cli::Fail("oans-plan", c);
  }
  return -1;
}

// A note the figures cannot give: net figures that may be too high.
void RefsNote(const PlanStats& s, const Args& a) {
  if (s.refs_known || a.json || a.quiet || (!s.frees_bytes && !s.planned_bytes)) return;
  std::fputs("  references not known: covered extents counted as freed\n", stderr);
}

}  // namespace

int main(int argc, char** argv) {
  oans::SetUpHeap();
  CLI::App app{
      "Read extent indexes (standard input when none is given; several are merged) and write a\n"
      "dedupe plan: whole-file duplicates and runs of identical blocks that do not share their\n"
      "data yet, in rounds of at most --round-size bytes ordered by physical offset. Files of\n"
      "different filesystems are never paired.\n"
      "\n"
      "Examples:\n"
      "  oans-plan --stats -o plan.capnp data.idx          a plan and the net space it frees\n"
      "  oans-plan --snapshots=none -o plan.capnp data.idx  leave read-only snapshots alone\n"
      "  oans-plan --since old.idx -o plan.capnp new.idx   only groups with new or changed files\n"
      "  oans-plan --format dirs --top 20 data.idx         the directories holding the duplicates\n"
      "  oans-plan --format text data.idx | less           the duplicate groups, readable\n"
      "  oans-plan --from-list dupes.txt -o plan.capnp     from an fdupes/jdupes list",
      "oans-plan"};
  app.set_version_flag("--version", ToolVersionString("oans-plan"));
  Args a;
  AddOptions(app, a);
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (int rc = Complete(app, a, argc, argv); rc >= 0) return rc;
  std::atomic<bool> stop{false};
  cli::InstallSignalHandlers(&stop);
  a.o.stop = &stop;

  cli::ProgressMode mode;
  cli::ParseProgressMode(a.progress, &mode);
  cli::ProgressRenderer renderer("oans-plan", mode, a.quiet);
  PlanStats s;
  int report_rc = cli::kOk;
  if (int rc = Plan(a, renderer, &s, &report_rc); rc >= 0) return rc;
  s.seconds = renderer.ElapsedSeconds();
  cli::EmitFigures({.tool = "oans-plan", .summary_file = a.summary_file, .json = a.json,
                    .text = !a.quiet || a.stats_flag, .all = a.stats_flag, .stdout_has_output = a.output == "-"},
                   PlanFigures(), s);
  RefsNote(s, a);
  return report_rc;
}
