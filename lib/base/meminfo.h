// What /proc/meminfo says of this machine's memory.
#pragma once

#include <cstdint>

namespace oans {

// MemAvailable, in bytes: what can be allocated without swapping, page cache counted as
// free where it can be dropped. 0 when it cannot be read.
uint64_t MemAvailableBytes();

}  // namespace oans
