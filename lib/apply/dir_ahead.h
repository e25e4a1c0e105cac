// On a spinning disk, before the first round: the directories above the plan's files,
// listed once by inode as an elevator goes (as the scan's walk does), so that the
// rounds' path lookups find their blocks cached. Without it, each round's lookups read
// directory blocks wherever its files' directories lie: with caches cold, apply of the
// kernel tree x 2 on XFS spent most of its positioning there (docs/benchmarks.md).
// A hint: a directory that cannot be listed is looked up later as before.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lib/base/sys.h"
#include "lib/format/plan_file.h"

namespace oans {

// The directories above the paths of a plan's files, each once, gathered round by round
// while the plan is read through (ValidatePlan). Past `limit` directories it gives up:
// none are listed ahead.
class PlanDirectories {
 public:
  explicit PlanDirectories(size_t limit = size_t(1) << 22) : limit_(limit) {}
  void Add(const PlanRound& round);
  // The directories, sorted; none once over the limit.
  std::vector<std::string> Take();

 private:
  void AddPath(const std::string& path);
  std::unordered_set<std::string> dirs_;
  size_t limit_;
  bool over_ = false;
};

// Lists, from each root down, every directory of `dirs` (sorted) and none other: the next
// inode up from the last one listed, the lowest once none is above. Each is opened by its
// path with no symlink followed and listed only if it is still the inode its parent
// listed. Returns the directories listed; `stop` is asked before each.
uint64_t ListDirectoriesAhead(Sys& sys, const std::vector<std::string>& roots, const std::vector<std::string>& dirs,
                              const std::function<bool()>& stop);

}  // namespace oans
