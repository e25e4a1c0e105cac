#include "lib/scan/sector_sums.h"

#include "lib/base/crc32c.h"
#include "lib/btrfs/csum.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace oans {
namespace {

// Seeds of the key families made from sums, one per kind (+ kind), apart from XXH3-128
// of data (unseeded) and from the sparse key (lib/scan/hasher.cc).
constexpr uint64_t kWholeSeed = 0x6f616e732d77686full;  // "oans-who"
constexpr uint64_t kBlockSeed = 0x6f616e732d626c6bull;  // "oans-blk"

}  // namespace

SumKind SumKindOfBtrfs(uint16_t csum_type) {
  switch (csum_type) {
    case kBtrfsCsumCrc32c: return SumKind::kCrc32c;
    case kBtrfsCsumXxhash: return SumKind::kXxhash64;
    case kBtrfsCsumSha256: return SumKind::kSha256;
    case kBtrfsCsumBlake2: return SumKind::kBlake2;
    default: return SumKind::kNone;
  }
}

bool Computable(SumKind k) { return k == SumKind::kCrc32c || k == SumKind::kXxhash64; }

uint32_t SectorSum(SumKind k, const char* data, size_t len) {
  static const char zeros[kSectorBytes] = {};
  len = std::min<size_t>(len, kSectorBytes);
  if (k == SumKind::kXxhash64) {
    if (len == kSectorBytes) return uint32_t(XXH64(data, len, 0));
    char padded[kSectorBytes] = {};
    std::memcpy(padded, data, len);
    return uint32_t(XXH64(padded, kSectorBytes, 0));
  }
  uint32_t c = Crc32c(0, data, len);
  return len == kSectorBytes ? c : Crc32c(c, zeros, kSectorBytes - len);
}

uint32_t ZeroSectorSum(SumKind k) {
  static const char zeros[kSectorBytes] = {};
  static const uint32_t crc = SectorSum(SumKind::kCrc32c, zeros, kSectorBytes);
  static const uint32_t xxh = SectorSum(SumKind::kXxhash64, zeros, kSectorBytes);
  return k == SumKind::kXxhash64 ? xxh : crc;
}

SumKeys::SumKeys(SumKind kind, uint64_t size, uint32_t block_size)
    : kind_(kind),
      size_(size),
      per_block_(std::max<uint32_t>(1, block_size / kSectorBytes)),
      keep_sums_((size + kSectorBytes - 1) / kSectorBytes <= kMaxKeptSums) {
  whole_ = XXH3_createState();
  holes_ = XXH3_createState();
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(whole_));
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(holes_));
  block_.reserve(per_block_);
  if (keep_sums_) sums_.reserve(size_t((size + kSectorBytes - 1) / kSectorBytes * 4));
}

SumKeys::~SumKeys() {
  XXH3_freeState(static_cast<XXH3_state_t*>(whole_));
  XXH3_freeState(static_cast<XXH3_state_t*>(holes_));
}

void SumKeys::EndBlock() {
  if (keep_blocks_) {
    XXH128_hash_t h = XXH3_128bits_withSeed(block_.data(), block_.size() * 4, kBlockSeed + uint64_t(kind_));
    blocks_.push_back({h.high64, h.low64});
  }
  block_.clear();
}

void SumKeys::Add(uint32_t sum) {
  if (hole_len_) {
    const uint64_t where[2] = {hole_start_, hole_len_};
    XXH3_128bits_update(static_cast<XXH3_state_t*>(holes_), where, sizeof where);
    hole_len_ = 0;
  }
  XXH3_128bits_update(static_cast<XXH3_state_t*>(whole_), &sum, 4);
  if (keep_sums_) PutSum(&sums_, sum);
  block_.push_back(sum);
  if (block_.size() == per_block_) EndBlock();
  sectors_++;
}

void SumKeys::Hole(uint64_t sectors) {
  if (sectors == 0) return;
  if (!sparse_ && (size_ / kSectorBytes / per_block_ + 1) > kMaxSparseBlockHashes) {
    keep_blocks_ = false;
    std::vector<Hash128>().swap(blocks_);
  }
  sparse_ = true;
  const uint32_t zero = ZeroSectorSum(kind_);
  const uint64_t start = sectors_;
  for (uint64_t i = 0; i < sectors; ++i) Add(zero);
  if (hole_len_ == 0) hole_start_ = start;
  hole_len_ += sectors;
}

void SumKeys::Finish(Hash128* whole, std::vector<Hash128>* blocks, std::string* sums) {
  if (!block_.empty()) EndBlock();
  if (hole_len_) {
    const uint64_t where[2] = {hole_start_, hole_len_};
    XXH3_128bits_update(static_cast<XXH3_state_t*>(holes_), where, sizeof where);
  }
  XXH128_hash_t d = XXH3_128bits_digest(static_cast<XXH3_state_t*>(whole_));
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(holes_));
  const uint64_t key[6] = {size_, uint64_t(kind_), d.high64, d.low64, sparse_ ? h.high64 : 0, sparse_ ? h.low64 : 0};
  XXH128_hash_t w = XXH3_128bits_withSeed(key, sizeof key, kWholeSeed + uint64_t(kind_));
  *whole = {w.high64, w.low64};
  *blocks = std::move(blocks_);
  *sums = std::move(sums_);
}

void DataSums::Data(const char* p, size_t len) {
  if (!keep_) return;
  for (size_t at = 0; at < len; at += kSectorBytes) PutSum(&sums_, SectorSum(SumKind::kCrc32c, p + at, len - at));
}

void DataSums::Hole(uint64_t len) {
  if (!keep_) return;
  const uint32_t zero = ZeroSectorSum(SumKind::kCrc32c);
  for (uint64_t at = 0; at < len; at += kSectorBytes) PutSum(&sums_, zero);
}

}  // namespace oans
