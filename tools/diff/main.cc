// oans-diff OLD NEW: what changed between two generations of an index.
#include <cstdio>

#include "lib/base/heap.h"
#include "lib/plan/diff.h"
#include "lib/plan/plan_figures.h"
#include "lib/base/json.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/common/cli.h"
#include "tools/common/summary.h"

using namespace oans;

int main(int argc, char** argv) {
  oans::SetUpHeap();
  CLI::App app{"List the files added, removed, changed (same inode, new size, mtime or ctime) and renamed\n"
               "(same inode, new path) between two indexes of the same trees, one per line (a newline in a\n"
               "name is written \\n and a backslash \\\\; --json gives the exact bytes).\n"
               "\n"
               "Examples:\n"
               "  oans-diff monday.idx tuesday.idx                what changed between two scans\n"
               "  oans-diff --json monday.idx tuesday.idx         the same as JSON lines",
               "oans-diff"};
  app.set_version_flag("--version", ToolVersionString("oans-diff"));
  std::string old_path, new_path;
  bool json = false;
  app.add_option("old", old_path, "The earlier index")->required()->type_name("OLD");
  app.add_option("new", new_path, "The later index")->required()->type_name("NEW");
  app.add_flag("--json", json, "One JSON object per change on standard output; the summary as JSON on standard error");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  DiffStats s;
  Status st = DiffIndexes(
      old_path, new_path,
      [json](const DiffEntry& e) {
        if (json) {
          Json line = Json::object();
          line["change"] = DiffKindName(e.kind);
          AddPath(line, "path", e.path);
          if (e.kind == DiffKind::kRenamed) AddPath(line, "old_path", e.old_path);
          line["size"] = e.size;
          line["old_size"] = e.old_size;
          PrintJsonLine(stdout, line);
        } else if (e.kind == DiffKind::kRenamed) {
          std::printf("renamed %s -> %s\n", cli::EscapeLine(e.old_path).c_str(), cli::EscapeLine(e.path).c_str());
        } else {
          std::printf("%s %s\n", DiffKindName(e.kind), cli::EscapeLine(e.path).c_str());
        }
      },
      &s);
  if (!st.ok()) return cli::Fail("oans-diff", st);
  // Standard output carries the changes: the summary goes to stderr.
  cli::EmitFigures(
      {.tool = "oans-diff", .summary_file = "", .json = json, .text = true, .all = false, .stdout_has_output = true},
                   DiffFigures(), s);
  return cli::kOk;
}
