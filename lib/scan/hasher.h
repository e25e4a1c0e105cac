// Content hashing: XXH3-128 of a whole file and of each fixed-size block, in one
// sequential pass through a small reused buffer. A hash match only nominates candidates;
// the kernel's byte compare in FIDEDUPERANGE is what makes dedupe safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/hash128.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

struct FileHashes {
  Hash128 whole;
  // One per block (the last may cover a partial block), or none for a sparse file of more
  // than kMaxSparseBlockHashes blocks: it then takes part in whole-file matching only.
  std::vector<Hash128> blocks;
  uint64_t bytes_read = 0;
  bool sparse = false;  // holes were skipped: `whole` is the sparse key (see HashFile)
  // crc32c of every 4 KiB sector (lib/scan/sector_sums.h), 4 bytes each, little-endian;
  // empty past kMaxKeptSums sectors.
  std::string sector_sums;
};

// Most block hashes kept for a file with holes (16 MiB of them): past it, hashes of
// blocks of holes would cost memory by the file's size rather than its data.
inline constexpr uint64_t kMaxSparseBlockHashes = uint64_t(1) << 20;

// How a file's data is read when it must be: the block size of its keys, this thread's
// buffer, the scan's byte count (may be null) and stop flag (may be null).
struct ReadIo {
  uint32_t block_size;
  std::vector<char>* buffer;
  std::atomic<uint64_t>* bytes_read = nullptr;
  const std::atomic<bool>* stop = nullptr;
};

// Hashes `size` bytes of fd from offset 0 in blocks of io.block_size (a multiple of
// 4096), read through io.buffer. A file that ends early or grows is reported as
// kMismatch: it changed while being read. io.bytes_read (may be null) grows by each
// chunk read, for progress. io.stop (may be null) is checked before every read: once
// set, kInterrupted.
//
// Whole blocks of holes (found with SEEK_DATA) are skipped, neither read nor hashed, so
// time goes by the data, not the size. A file with no such hole gets XXH3-128 of its
// bytes as `whole`; one with holes gets the sparse key instead, a differently seeded
// XXH3-128 over its size, the hash of the bytes read and the list of holes skipped: two
// files can share it only if they have the same data at the same offsets and holes in
// the same places, so it never stands for a dense file's content. Every 4 KiB sector also
// gets its crc32c (holes the zero sector's), for 4 KiB partial matching.
Result<FileHashes> HashFile(Sys& sys, int fd, uint64_t size, const ReadIo& io);

// The hashes HashFile gives a file of `len` bytes without holes that holds `data`.
FileHashes HashMemory(const char* data, size_t len, uint32_t block_size);

}  // namespace oans
