// The walk's expected size, for its progress: the files and bytes the previous index
// recorded, or else the space and inodes in use on the roots' filesystems. Only an
// estimate (files changed, a root may be part of its filesystem, extents are shared),
// and the progress it feeds says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/sys.h"

namespace oans {

struct WalkEstimate {
  uint64_t bytes = 0, files = 0;  // 0: not known
  const char* source = "none";   // "previous index", "used space", "none"
};

// From the previous index's totals when it was read whole (previous_records > 0), else
// statfs of each distinct filesystem among `roots` (each counted once).
WalkEstimate EstimateWalk(Sys& sys, const std::vector<std::string>& roots, uint64_t previous_records,
                          uint64_t previous_bytes, bool previous_complete);

// The walk's snapshot so far: bytes and files met against the estimate.
ProgressSnapshot WalkProgress(const WalkEstimate& e, uint64_t walked_bytes, uint64_t files);

}  // namespace oans
