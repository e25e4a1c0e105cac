#include "lib/base/extent_code.h"

#include <cstring>

namespace oans {
namespace {

uint64_t Zigzag(uint64_t delta) { return (delta << 1) ^ uint64_t(int64_t(delta) >> 63); }
uint64_t Unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

}  // namespace

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(char(v | 0x80));
    v >>= 7;
  }
  out->push_back(char(v));
}

void PutExtents(std::string* out, std::span<const FiemapExtent> extents) {
  PutVarint(out, extents.size());
  uint64_t logical = 0, physical = 0;  // where the previous extent ended
  for (const auto& e : extents) {
    PutVarint(out, Zigzag(e.logical - logical));
    PutVarint(out, Zigzag(e.physical - physical));
    PutVarint(out, e.length);
    PutVarint(out, e.flags);
    logical = e.logical + e.length;
    physical = e.physical + e.length;
  }
}

uint64_t CodeReader::Varint() {
  uint64_t v = 0;
  for (int shift = 0; ok_ && shift < 64 && p_ < end_; shift += 7) {
    const uint8_t b = uint8_t(*p_++);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  ok_ = false;
  return 0;
}

uint32_t CodeReader::Varint32() {
  const uint64_t v = Varint();
  if (v > UINT32_MAX) ok_ = false;
  return ok_ ? uint32_t(v) : 0;
}

void CodeReader::Extents(std::vector<FiemapExtent>* out) {
  out->clear();
  const uint64_t n = Varint();
  if (!ok_ || n > uint64_t(end_ - p_) / 4) {  // an extent takes 4 bytes at least
    ok_ = false;
    return;
  }
  out->resize(size_t(n));
  uint64_t logical = 0, physical = 0;
  for (auto& e : *out) {
    e.logical = logical + Unzigzag(Varint());
    e.physical = physical + Unzigzag(Varint());
    e.length = Varint();
    e.flags = Varint32();
    logical = e.logical + e.length;
    physical = e.physical + e.length;
  }
  if (!ok_) out->clear();
}

void CodeReader::Bytes(void* to, size_t n) {
  if (!ok_ || size_t(end_ - p_) < n) {
    ok_ = false;
    return;
  }
  std::memcpy(to, p_, n);
  p_ += n;
}

}  // namespace oans
