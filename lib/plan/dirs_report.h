// `oans-plan --format dirs`: which directories hold the duplicates.
// Input: the whole-file groups RunPlan reports.
// Each destination not yet sharing all its source's data counts.
// It adds its size (the bytes a plan would reclaim) and one file.
// It adds them to its directory and to every directory above it.
// That stops at the deepest directory holding them all, as `du DIR` adds up.
// The directories with the most reclaimable bytes come first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/plan/planner.h"

namespace oans {

struct DirUsage {
  std::string dir;
  uint64_t reclaimable_bytes = 0;  // sizes of the duplicates below dir not yet shared
  uint64_t duplicate_files = 0;    // how many such files are below dir
};

// The `top` directories (all when 0) by reclaimable bytes, most first; ties by path.
std::vector<DirUsage> DirsReport(const std::vector<GroupReport>& groups, size_t top);

// One line per directory: "<bytes, human>  <files> files  <dir>", names with C-style
// escapes (a newline as \n, a backslash as \\) so every directory is one line.
std::string DirsText(const std::vector<DirUsage>& dirs);
// One JSON object per line: {"path":...,"reclaimable_bytes":N,"duplicate_files":N}.
std::string DirsJson(const std::vector<DirUsage>& dirs);

}  // namespace oans
