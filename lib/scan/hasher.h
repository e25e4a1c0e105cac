// Content hashing: XXH3-128 of a whole file and of each fixed-size block, in one
// sequential pass through a small reused buffer. A hash match only nominates candidates;
// the kernel's byte compare in FIDEDUPERANGE is what makes dedupe safe.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  friend auto operator<=>(const Hash128&, const Hash128&) = default;
};

struct FileHashes {
  Hash128 whole;
  std::vector<Hash128> blocks;  // one per block; the last may cover a partial block
  uint64_t bytes_read = 0;
};

// Hashes `size` bytes of fd from offset 0 in blocks of block_size (a multiple of 4096).
// A file that ends early or grows is reported as kMismatch: it changed while being read.
// `on_bytes` (may be null) is called with the count of each chunk read, for progress.
Result<FileHashes> HashFile(Sys& sys, int fd, uint64_t size, uint32_t block_size,
                            std::vector<char>* buffer, void (*on_bytes)(void*, uint64_t) = nullptr,
                            void* ctx = nullptr);

// XXH3-128 of a memory range.
Hash128 HashBytes(const void* data, size_t len);

}  // namespace oans
