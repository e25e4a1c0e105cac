#include "lib/base/crc32c.h"

#include <array>
#include <cstring>

namespace oans {
namespace {

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t Crc32cTable(uint32_t crc, const unsigned char* p, size_t len) {
  static const std::array<uint32_t, 256> table = MakeTable();
  for (size_t i = 0; i < len; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const unsigned char* p, size_t len) {
  uint64_t c = crc;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = uint32_t(c);
  for (; len > 0; ++p, --len) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (kHaveSse42) return ~Crc32cHardware(~crc, p, len);
#endif
  return ~Crc32cTable(~crc, p, len);
}

}  // namespace oans
