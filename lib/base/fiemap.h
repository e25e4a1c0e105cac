// FS_IOC_FIEMAP: the extents of an open file, in batches, for all of it or one range.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// The extents overlapping [start, start + length) (length UINT64_MAX: to the end), in
// logical order, asked for 256 at a time until the last one or the end of the range.
// FIEMAP_FLAG_SYNC: delayed allocations are written first, so every extent has its place.
Status ReadFiemap(int fd, uint64_t start, uint64_t length, std::vector<FiemapExtent>* out);

}  // namespace oans
