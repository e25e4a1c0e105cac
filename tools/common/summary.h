// A tool's final summary. People get a head line, then the parts joined with ", ".
// They are wrapped into indented lines of at most 79 columns. A narrower terminal on
// stderr gets fewer; a part longer than that stands alone. Machines get the same
// figures as one JSON line (lib/base/figures.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "lib/base/figures.h"
#include "lib/base/json.h"

namespace oans::cli {

// Within 80 columns without touching the last one, where some terminals wrap.
inline constexpr size_t kSummaryWidth = 79;

// kSummaryWidth, or a terminal's narrower width less one when stderr is one.
size_t SummaryWidth();

// "head\n  part1, part2,\n  part3\n"; empty parts are left out, no parts: the head alone.
// An empty head gives the indented lines alone ("" when there is nothing either). A head
// wider than `width` is wrapped at spaces. width 0: SummaryWidth().
std::string WrapSummary(const std::string& head, const std::vector<std::string>& parts, size_t width = 0);

// Adds --summary-file FILE: the summary is also written to FILE as one JSON line.
// It holds what --json prints, whatever else is printed.
// oans run keeps it in its record of the night.
CLI::Option* AddSummaryFile(CLI::App& app, std::string* path);
// Writes summary to path, created or replaced, never through a symlink. A failure is
// told on stderr and does not change the exit code.
void WriteSummaryFile(const std::string& tool, const std::string& path, const Json& summary);

// The help of --json, the same in every tool.
inline constexpr const char* kJsonHelp =
    "Print the summary as one JSON line: on standard output, or on standard error when standard output "
    "carries the tool's output (docs/format.md, \"Summaries\")";

// Where --json prints the summary. Standard output is the data stream.
// When it carries the tool's output already, the summary goes to stderr.
// So it cannot corrupt that output.
std::FILE* JsonStream(bool stdout_has_output);

// How a tool ends with its summary.
struct SummaryTo {
  std::string tool;          // "oans-scan"
  std::string summary_file;  // --summary-file, or ""
  bool json = false;         // --json
  bool text = true;          // the human summary (not with --quiet)
  bool all = false;          // every labelled figure, one a line (oans-plan --stats)
  bool stdout_has_output = false;
};

// Writes the summary file, then the JSON line or the human summary on stderr.
// Each of body's lines is wrapped on its own.
void EmitSummary(const SummaryTo& to, const Json& json, const std::string& head,
                 const std::vector<std::vector<std::string>>& body);

// EmitSummary of a figures table (lib/base/figures.h).
template <class S>
void EmitFigures(const SummaryTo& to, const Figures<S>& table, const S& s) {
  EmitSummary(to, FiguresJson(table, s), FiguresHead(table, s), FiguresBody(table, s, to.all));
}

}  // namespace oans::cli
