#include "lib/format/sector_sum_encoding.h"

namespace oans {

const char* SumKindName(SumKind k) {
  switch (k) {
    case SumKind::kCrc32c: return "crc32c";
    case SumKind::kXxhash64: return "xxhash64";
    case SumKind::kSha256: return "sha256";
    case SumKind::kBlake2: return "blake2";
    default: return "none";
  }
}

void PutSum(std::string* out, uint32_t v) {
  const char b[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
  out->append(b, 4);
}

}  // namespace oans
