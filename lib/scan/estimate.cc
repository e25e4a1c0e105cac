#include "lib/scan/estimate.h"

#include <fcntl.h>

#include <algorithm>
#include <set>

#include "lib/base/fd.h"

namespace oans {

WalkEstimate EstimateWalk(Sys& sys, const std::vector<std::string>& roots, uint64_t previous_records,
                          uint64_t previous_bytes, bool previous_complete) {
  WalkEstimate e;
  if (previous_complete && previous_records > 0) {
    e.bytes = previous_bytes;
    e.files = previous_records;
    e.source = "previous index";
    return e;
  }
  std::set<uint64_t> seen;
  for (const auto& root : roots) {
    auto fd = Own(sys, sys.OpenAt(AT_FDCWD, root, true));  // no symlink followed at the root itself
    if (!fd.ok()) continue;
    auto st = sys.Fstat(fd->get());
    auto usage = sys.Usage(fd->get());
    fd->reset();
    if (!st.ok() || !usage.ok() || !seen.insert(st->dev).second) continue;
    e.bytes += usage->used_bytes;
    e.files += usage->used_inodes;
  }
  if (e.bytes > 0 || e.files > 0) e.source = "used space";
  return e;
}

ProgressSnapshot WalkProgress(const WalkEstimate& e, uint64_t walked_bytes, uint64_t files) {
  ProgressSnapshot s;
  s.phase = "walk";
  s.done_bytes = walked_bytes;
  s.total_bytes = e.bytes;
  s.done_items = files;
  s.total_items = e.files;
  s.estimate = e.bytes > 0 || e.files > 0;
  return s;
}

}  // namespace oans
