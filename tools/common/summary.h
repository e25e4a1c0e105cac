// Final summaries that fit a terminal: a head line, then the parts joined with ", " and
// wrapped into indented lines of at most 80 columns (a part longer than that stands alone).
#pragma once

#include <string>
#include <vector>

namespace oans::cli {

inline constexpr size_t kSummaryWidth = 80;

// "head\n  part1, part2,\n  part3\n"; empty parts are left out, no parts: the head alone.
// An empty head gives the indented lines alone ("" when there is nothing either).
std::string WrapSummary(const std::string& head, const std::vector<std::string>& parts,
                        size_t width = kSummaryWidth);

// The non-empty parts, the first one prefixed "skipped "; nothing when all are empty.
std::vector<std::string> Skipped(const std::vector<std::string>& parts);

// "12 errors" for a count, "" for 0 (left out by WrapSummary).
std::string Counted(unsigned long long n, const std::string& what);

}  // namespace oans::cli
