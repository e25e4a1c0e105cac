// crc32c (Castagnoli), the checksum btrfs keeps of its data sectors and tree blocks by
// default (and iSCSI's). With SSE 4.2 where the processor has it, a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oans {

// crc32c of `len` bytes, continuing from `crc` (0 to start).
uint32_t Crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace oans
