// Final summaries that fit a terminal: a head line, then the parts joined with ", " and
// wrapped into indented lines of at most 79 columns, or fewer on a narrower terminal on
// stderr (a part longer than that stands alone).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

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

// The non-empty parts, the first one prefixed "skipped "; nothing when all are empty.
std::vector<std::string> Skipped(const std::vector<std::string>& parts);

// "12 errors" for a count, "" for 0 (left out by WrapSummary).
std::string Counted(unsigned long long n, const std::string& what);

// Adds --summary-file FILE: the summary is also written to FILE as one JSON line (what
// --json prints), whatever else is printed; oans run keeps it in its record of the night.
CLI::Option* AddSummaryFile(CLI::App& app, std::string* path);
// Writes summary to path, created or replaced, never through a symlink. A failure is
// told on stderr and does not change the exit code.
void WriteSummaryFile(const std::string& tool, const std::string& path, const Json& summary);

}  // namespace oans::cli
