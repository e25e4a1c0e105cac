#include "lib/apply/compare.h"

#include <algorithm>
#include <cstring>

namespace oans {

Status FileCompare::Equal(Sys& reads, int a, int b, uint64_t size, const std::function<bool()>& held,
                          bool* transient) {
  for (uint64_t off = 0; off < size;) {
    const size_t want = size_t(std::min<uint64_t>(a_.size(), size - off));
    auto x = reads.Pread(a, a_.data(), want, off);
    auto y = reads.Pread(b, b_.data(), want, off);
    if (!x.ok()) return x.status();
    if (!y.ok()) return y.status();
    if (*x != want || *y != want) return Status::Mismatch("changed while being compared");
    if (std::memcmp(a_.data(), b_.data(), want) != 0) return Status::Mismatch(kContentDiffers);
    off += want;
    if (!held()) {
      *transient = true;
      return Status::Mismatch("opened for writing by another process during the compare");
    }
  }
  return Status::Ok();
}

}  // namespace oans
