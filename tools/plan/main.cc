// oans-plan [INDEX...]: find duplicate data that is not yet shared and write a dedupe plan.
#include <cerrno>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "lib/format/dupe_list.h"
#include "lib/base/json.h"
#include "lib/base/sys.h"
#include "lib/plan/planner.h"
#include "lib/base/units.h"
#include "lib/base/version.h"
#include "tools/common/cli.h"
#include "tools/common/progress.h"

using namespace oans;

namespace {

std::string list_path_to_remove;
struct RemoveListIndex {
  ~RemoveListIndex() {
    if (!list_path_to_remove.empty()) unlink(list_path_to_remove.c_str());
  }
} remove_list_index;

void PrintReport(FILE* f, const std::string& format, const std::vector<GroupReport>& groups) {
  for (const auto& g : groups) {
    if (format == "fdupes") {
      std::fprintf(f, "%s\n", g.source.c_str());
      for (const auto& d : g.dests) std::fprintf(f, "%s\n", d.c_str());
      std::fprintf(f, "\n");
    } else if (format == "json") {
      std::string line = "{\"size\":" + std::to_string(g.size) + ",\"files\":[{" + JsonPath("path", g.source) +
                         ",\"source\":true}";
      for (size_t i = 0; i < g.dests.size(); ++i)
        line += ",{" + JsonPath("path", g.dests[i]) + ",\"already_shared\":" + (g.dest_shared[i] ? "true" : "false") + "}";
      std::fprintf(f, "%s]}\n", line.c_str());
    } else {
      size_t shared = 0;
      for (bool b : g.dest_shared) shared += b;
      std::fprintf(f, "%zu files of %s each; %zu already share the source's data\n", g.dests.size() + 1,
                   FormatSize(g.size).c_str(), shared);
      std::fprintf(f, "  %s (source)\n", g.source.c_str());
      for (size_t i = 0; i < g.dests.size(); ++i)
        std::fprintf(f, "  %s%s\n", g.dests[i].c_str(), g.dest_shared[i] ? " (shared)" : "");
      std::fprintf(f, "\n");
    }
  }
}

// A signal stopped the planner: nothing was written (or committed).
int Stopped() {
  std::fprintf(stderr, "oans-plan: stopped; no plan written\n");
  return cli::kStopped;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Read extent indexes (standard input when none is given; several are merged) and write a\n"
      "dedupe plan: whole-file duplicates and runs of identical blocks that do not share their\n"
      "data yet, in rounds of at most --round-size bytes ordered by physical offset. Files of\n"
      "different filesystems are never paired.\n"
      "Example: oans-scan /srv/data | oans-plan --stats > plan.capnp",
      "oans-plan"};
  app.set_version_flag("--version", ToolVersionString("oans-plan"));
  PlanOptions o;
  std::string output = "-", progress = "auto", format = "plan";
  bool stats_flag = false, json = false, quiet = false, no_blocks = false;
  app.add_option("indexes", o.indexes, "Index files from oans-scan ('-' for standard input)")->type_name("INDEX");
  app.add_option("-o,--output", output, "Write the plan to FILE (atomically) instead of standard output")
      ->type_name("FILE");
  cli::AddSize(app, "--round-size", &o.round_size,
               "Bytes read per round, sources plus destinations (default 32M, at least 1M)");
  std::string fdupes;
  app.add_option("--from-list", fdupes,
                 "Plan from a duplicate list of fdupes or jdupes (paths, a blank line between groups) instead of "
                 "indexes; the kernel still compares every byte before sharing")
      ->type_name("FILE");
  app.add_option("--since", o.since, "Plan only duplicate groups involving a file new or changed since index OLD")
      ->type_name("OLD");
  cli::AddSize(app, "--memory", &o.memory,
               "Memory for the planner's records (default 512M, at least 16M); past it, sorted runs and file "
               "details go to temporary files, removed on exit");
  app.add_option("--temp-dir", o.temp_dir, "Directory for those temporary files (default $TMPDIR, else /var/tmp)")
      ->type_name("DIR");
  app.add_flag("--whole-files-only", no_blocks, "Plan whole-file duplicates only, not partial (block) duplicates");
  app.add_option("--format", format,
                 "What to write: plan (default), or a report of the whole-file duplicate groups instead: text, "
                 "json (one group per line) or fdupes (paths, a blank line between groups)")
      ->check(CLI::IsMember({"plan", "text", "json", "fdupes"}));
  app.add_flag("--stats", stats_flag, "Print groups, duplicate, shared and reclaimable bytes on stderr");
  app.add_flag("--json", json, "Print the statistics as JSON on stderr (implies --stats)");
  app.add_option("--progress", progress, "Progress on stderr: auto, tty, json or none")
      ->check(CLI::IsMember({"auto", "tty", "json", "none"}));
  app.add_flag("-q,--quiet", quiet, "Print only errors");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  std::unique_ptr<OutputFile> list_index;
  if (!fdupes.empty()) {
    if (!o.indexes.empty()) return cli::Fail("oans-plan", "give indexes or --from-list, not both");
    // The list becomes a temporary index, read like any other.
    char tmpl[] = "/tmp/oans-list-XXXXXX";
    int dirfd = mkstemp(tmpl);
    if (dirfd < 0) return cli::Fail("oans-plan", Status::Io("creating a temporary file", errno));
    close(dirfd);
    unlink(tmpl);
    auto idx = OutputFile::Open(tmpl);
    if (!idx.ok()) return cli::Fail("oans-plan", idx.status());
    cli::ProgressRenderer list_notices("oans-plan", cli::ProgressMode::kNone, quiet);
    DupeListStats ls;
    Status st = IndexFromDuplicateList(DefaultSys(), fdupes == "-" ? "/dev/stdin" : fdupes, 128 * 1024, idx->get(),
                                       &list_notices, &ls);
    if (st.ok()) st = (*idx)->Commit();
    if (!st.ok()) return cli::Fail("oans-plan", st);
    list_index = std::move(*idx);
    o.indexes.push_back(tmpl);
    list_path_to_remove = tmpl;
  }
  if (o.memory < (16u << 20)) return cli::Fail("oans-plan", "--memory must be at least 16M");
  if (o.indexes.empty()) o.indexes.push_back("-");
  o.blocks = !no_blocks;
  o.command_line = cli::Argv(argc, argv);
  std::atomic<bool> stop{false};
  cli::InstallSignalHandlers(&stop);
  o.stop = &stop;

  cli::ProgressMode mode;
  cli::ParseProgressMode(progress, &mode);
  cli::ProgressRenderer renderer("oans-plan", mode, quiet);
  PlanStats s;
  if (format != "plan") {
    std::vector<GroupReport> groups;
    Status st = RunPlan(o, nullptr, &renderer, &s, &groups);
    renderer.Finish();
    if (st.code() == Status::Code::kInterrupted) return Stopped();
    if (!st.ok()) return cli::Fail("oans-plan", st);
    FILE* f = stdout;
    if (output != "-" && !(f = std::fopen(output.c_str(), "w")))
      return cli::Fail("oans-plan", Status::Io("creating " + output, errno));
    PrintReport(f, format, groups);
    if (std::fflush(f) != 0 || std::ferror(f)) return cli::Fail("oans-plan", Status::Io("writing the report", errno));
    if (f != stdout) std::fclose(f);
  } else {
    auto out = OutputFile::Open(output);
    if (!out.ok()) return cli::Fail("oans-plan", out.status());
    Status st = RunPlan(o, out->get(), &renderer, &s);
    renderer.Finish();
    if (st.code() == Status::Code::kInterrupted) return Stopped();  // the temporary output goes with `out`
    if (!st.ok()) return cli::Fail("oans-plan", st);
    if (Status c = (*out)->Commit(); !c.ok()) return cli::Fail("oans-plan", c);
  }
  if (json) {
    std::fprintf(stderr,
                 "{\"files\":%llu,\"filesystems\":%llu,\"groups\":%llu,\"whole_file_groups\":%llu,"
                 "\"block_groups\":%llu,\"duplicate_bytes\":%llu,\"shared_bytes\":%llu,\"planned_bytes\":%llu,"
                 "\"operations\":%llu,\"rounds\":%llu,\"skipped_errors\":%llu,\"skipped_inline\":%llu}\n",
                 (unsigned long long)s.files, (unsigned long long)s.filesystems,
                 (unsigned long long)(s.whole_groups + s.block_groups), (unsigned long long)s.whole_groups,
                 (unsigned long long)s.block_groups, (unsigned long long)s.duplicate_bytes,
                 (unsigned long long)s.shared_bytes, (unsigned long long)s.planned_bytes, (unsigned long long)s.ops,
                 (unsigned long long)s.rounds, (unsigned long long)s.skipped_errors,
                 (unsigned long long)s.skipped_inline);
  } else if (stats_flag) {
    std::fprintf(stderr,
                 "oans-plan: %llu files on %llu filesystem(s)\n"
                 "  duplicate groups:   %llu (%llu whole-file, %llu block)\n"
                 "  duplicate bytes:    %s\n"
                 "  already shared:     %s\n"
                 "  plan will reclaim:  %s in %llu operations, %llu rounds\n"
                 "  not considered:     %llu files the scan could not read, %llu with inline data\n",
                 (unsigned long long)s.files, (unsigned long long)s.filesystems,
                 (unsigned long long)(s.whole_groups + s.block_groups), (unsigned long long)s.whole_groups,
                 (unsigned long long)s.block_groups, FormatSize(s.duplicate_bytes).c_str(),
                 FormatSize(s.shared_bytes).c_str(), FormatSize(s.planned_bytes).c_str(), (unsigned long long)s.ops,
                 (unsigned long long)s.rounds, (unsigned long long)s.skipped_errors,
                 (unsigned long long)s.skipped_inline);
  } else if (!quiet) {
    std::fprintf(stderr, "oans-plan: %s to reclaim in %llu rounds (%s already shared)\n",
                 FormatSize(s.planned_bytes).c_str(), (unsigned long long)s.rounds, FormatSize(s.shared_bytes).c_str());
  }
  return cli::kOk;
}
