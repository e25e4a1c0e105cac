// Integers as LEB128 varints, and lists of extents in few bytes: each extent as its
// distance from where the previous one ended (logical and physical, zigzag: contiguous
// fragments cost a byte), its length and its flags. About a third of a fixed layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file_sys.h"

namespace oans {

void PutVarint(std::string* out, uint64_t v);

// Appends the count of `extents`, then each one.
void PutExtents(std::string* out, std::span<const FiemapExtent> extents);

// Reads what PutVarint and PutExtents wrote, from the front of `in`. Once a read runs
// past the end or finds a number too long, ok() is false for good and reads give 0.
class CodeReader {
 public:
  explicit CodeReader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  explicit CodeReader(std::string&&) = delete;  // it keeps no copy: the bytes must outlive it
  uint64_t Varint();
  // Of at most UINT32_MAX; past it, not ok.
  uint32_t Varint32();
  // Replaces *out. A count larger than the bytes left could hold is not ok.
  void Extents(std::vector<FiemapExtent>* out);
  // n raw bytes, or not ok when fewer are left.
  void Bytes(void* to, size_t n);
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace oans
