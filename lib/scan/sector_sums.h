// Sector fingerprints: one 32-bit value per 4 KiB of a file, either btrfs's own data
// checksum of that sector (taken from its checksum tree, lib/scan/csum.h) or the same
// function computed here over data read. The kind says which function made it; values
// of different kinds are never compared. From a file's sums come its keys: the
// whole-file key and the block keys (SumKeys), and the planner's 4 KiB partial matches
// (lib/plan/anchors.h).
//
// Sector i covers bytes [4096 i, 4096 (i + 1)); the last one is padded with zeros past
// the end of the file, as btrfs pads it. A kind's value is the low 32 bits of its
// checksum as btrfs stores it (little-endian): crc32c, XXH64 (seed 0), SHA-256 or
// BLAKE2b-256. crc32c and XXH64 are computed here too, so data read (compressed
// extents, holes, XFS) gets fingerprints comparable with the checksum tree's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/hash128.h"
#include "lib/format/sector_sum_encoding.h"
#include "lib/scan/hasher.h"

namespace oans {

// The kind of btrfs checksum type `csum_type` (BTRFS_IOC_FS_INFO), kNone if unknown.
SumKind SumKindOfBtrfs(uint16_t csum_type);
// Whether oans computes this kind itself (for data it reads).
bool Computable(SumKind k);

// The fingerprint of one sector of `len` <= 4096 bytes (zero-padded); k computable.
uint32_t SectorSum(SumKind k, const char* data, size_t len);
// The fingerprint of an all-zero sector.
uint32_t ZeroSectorSum(SumKind k);

// The keys of a file made from its sector sums, fed in order. Whole key: XXH3-128 over
// the size, the kind, the sums and, for a file with holes, where they are (so a sparse
// file never shares a key with a dense one); block key: XXH3-128 over one block's sums.
// Both are seeded by kind: even a planner that ignored the kinds would not pair them
// with XXH3-128 of data, which is unseeded.
class SumKeys {
 public:
  SumKeys(SumKind kind, uint64_t size, uint32_t block_size);
  ~SumKeys();
  SumKeys(const SumKeys&) = delete;
  SumKeys& operator=(const SumKeys&) = delete;
  void Add(uint32_t sum);
  // `sectors` sectors of hole (k computable): zero sums, recorded as a hole.
  void Hole(uint64_t sectors);
  uint64_t sectors() const { return sectors_; }
  SumKind kind() const { return kind_; }
  // The keys and the sums, little-endian 4 bytes each (empty past kMaxKeptSums).
  void Finish(Hash128* whole, std::vector<Hash128>* blocks, std::string* sums);

 private:
  void EndBlock();
  const SumKind kind_;
  const uint64_t size_;
  const uint32_t per_block_;
  void* whole_;  // XXH3_state_t
  void* holes_;
  bool sparse_ = false, keep_blocks_ = true, keep_sums_;
  uint64_t sectors_ = 0, hole_start_ = 0, hole_len_ = 0;
  std::vector<uint32_t> block_;  // the current block's sums
  std::vector<Hash128> blocks_;
  std::string sums_;
};

// Sector sums of kind crc32c over data read in order (HashFile's reads).
class DataSums {
 public:
  explicit DataSums(uint64_t size) : keep_((size + kSectorBytes - 1) / kSectorBytes <= kMaxKeptSums) {}
  // `len` bytes at the current position, a whole number of sectors except at the end.
  void Data(const char* p, size_t len);
  void Hole(uint64_t len);  // whole sectors
  std::string Take() { return std::move(sums_); }

 private:
  bool keep_;
  std::string sums_;
};

}  // namespace oans
