#include "lib/base/hash128.h"

#include <xxhash.h>

namespace oans {

Hash128 HashBytes(const void* data, size_t len) {
  XXH128_hash_t h = XXH3_128bits(data, len);
  return {h.high64, h.low64};
}

}  // namespace oans
