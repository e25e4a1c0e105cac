// Hardlink mode's byte-for-byte compare of two open files: nothing is linked unless
// every byte is equal. One per executor; single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// What a compare that found the bytes different returns (a Mismatch with this message).
inline constexpr char kContentDiffers[] = "differs (changed since scan)";

class FileCompare {
 public:
  FileCompare() : a_(1u << 20), b_(1u << 20) {}
  // Ok when the first `size` bytes of both are equal; Mismatch(kContentDiffers) when
  // not, or when either is shorter ("changed while being compared"). After each MiB,
  // `held()` must say that no writer came (the leases): else a Mismatch and *transient.
  Status Equal(Sys& reads, int a, int b, uint64_t size, const std::function<bool()>& held, bool* transient);

 private:
  std::vector<char> a_, b_;
};

}  // namespace oans
