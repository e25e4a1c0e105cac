// A 128-bit hash value (XXH3-128) and the hash of a memory range. The index holds such
// values as whole-file and block keys; hashes only nominate candidates for dedupe.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>

namespace oans {

struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  friend auto operator<=>(const Hash128&, const Hash128&) = default;
};

// XXH3-128 of a memory range.
Hash128 HashBytes(const void* data, size_t len);

}  // namespace oans
