// On a spinning disk, before the first round: the directories above the plan's files,
// listed once by inode as an elevator goes (as the scan's walk does), so that the
// rounds' path lookups find their blocks cached. Without it, each round's lookups read
// directory blocks wherever its files' directories lie: with caches cold, apply of the
// kernel tree x 2 on XFS spent most of its positioning there (docs/benchmarks.md).
// A hint: a directory that cannot be listed is looked up later as before. Listing reads
// a directory's entries; a large one's lookup may still read its hash blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lib/apply/apply.h"
#include "lib/base/sys.h"
#include "lib/format/plan_file.h"

namespace oans {

// The directories above the paths of a plan's files, each once, gathered round by round
// while the plan is read through (ValidatePlan). Past `limit_bytes` of paths it gives up:
// none are listed ahead (over()).
class PlanDirectories {
 public:
  explicit PlanDirectories(uint64_t limit_bytes = uint64_t(256) << 20) : limit_(limit_bytes) {}
  void Add(const PlanRound& round);
  // The directories, sorted; none once over the limit.
  std::vector<std::string> Take();
  bool over() const { return over_; }

 private:
  void AddPath(const std::string& path);
  std::unordered_set<std::string> dirs_;
  uint64_t bytes_ = 0, limit_;
  bool over_ = false;
};

// Whether apply will want the plan's directories: on a spinning disk as `o` tells or as
// the plan records (a plan that records none: no), with prefetch, not a dry run.
bool WantsPlanDirectories(const ApplyOptions& o, const PlanHeader& h);

// Lists, from each root down, every directory of `dirs` (sorted) and none other: the next
// (device, inode) up from the last one listed, the lowest once none is above. Each is
// opened by its path with no symlink followed and listed only if it is still the inode
// its parent listed, on the same device (a mount point below is not crossed). `stop` is
// asked before each directory and each batch of its entries. Returns the directories
// listed.
uint64_t ListDirectoriesAhead(Sys& sys, const std::vector<std::string>& roots, const std::vector<std::string>& dirs,
                              const std::function<bool()>& stop);

// Whether listing `dirs` directories ahead pays: their blocks (one at least each, of
// `block_size`) must stay cached until the rounds look them up, a quarter of the memory
// `available` at most. "" when it pays, else why not.
std::string ListAheadRefusal(uint64_t dirs, uint64_t block_size, uint64_t available);

// Lists `*dirs` ahead when that pays (ListAheadRefusal, with the memory available now,
// blocks of 4 KiB), else says why not through `notice`; then empties `*dirs`, which the
// rounds need no more. Returns the directories listed.
uint64_t ListPlanDirectoriesAhead(Sys& sys, const std::vector<std::string>& roots, std::vector<std::string>* dirs,
                                  const std::function<bool()>& stop,
                                  const std::function<void(const std::string&)>& notice);

}  // namespace oans
