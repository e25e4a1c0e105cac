// Sector sums as an index holds them: one 32-bit value per 4 KiB sector, 4 bytes
// little-endian each, and the kind of function that made them. How sums are made is
// the scan's business (lib/scan/sector_sums.h); this is only their encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oans {

inline constexpr uint32_t kSectorBytes = 4096;

// The kinds, as stored in a record (FileEntry::sum_kind, key_kind); 0 is none.
enum class SumKind : uint8_t { kNone = 0, kCrc32c = 1, kXxhash64 = 2, kSha256 = 3, kBlake2 = 4 };
inline constexpr SumKind kLastSumKind = SumKind::kBlake2;

const char* SumKindName(SumKind k);

// Past this many sectors (64 GiB) a file's sums are not kept in the index: it takes part
// in whole-file and block matching through its keys, not in 4 KiB partial matching.
inline constexpr uint64_t kMaxKeptSums = uint64_t(1) << 24;

// Appends `v` to `out`, 4 bytes little-endian.
void PutSum(std::string* out, uint32_t v);
// The sum of sector i.
inline uint32_t SumAt(std::string_view sums, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(sums.data() + 4 * i);
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace oans
