#include "lib/base/fiemap.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace oans {

Status ReadFiemap(int fd, uint64_t start, uint64_t length, std::vector<FiemapExtent>* out) {
  out->clear();
  const uint64_t end = length > FIEMAP_MAX_OFFSET - start ? FIEMAP_MAX_OFFSET : start + length;
  constexpr unsigned kBatch = 256;
  const size_t bytes = sizeof(struct fiemap) + kBatch * sizeof(struct fiemap_extent);
  std::unique_ptr<char[]> buf(new char[bytes]);
  while (start < end) {
    std::memset(buf.get(), 0, bytes);
    auto* fm = reinterpret_cast<struct fiemap*>(buf.get());
    fm->fm_start = start;
    fm->fm_length = end - start;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kBatch;
    if (::ioctl(fd, FS_IOC_FIEMAP, fm) != 0) return Status::Io("FIEMAP", errno);
    if (fm->fm_mapped_extents == 0) return Status::Ok();
    bool last = false;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const auto& e = fm->fm_extents[i];
      out->push_back({e.fe_logical, e.fe_physical, e.fe_length, e.fe_flags});
      if (e.fe_flags & FIEMAP_EXTENT_LAST) last = true;
    }
    const auto& e = fm->fm_extents[fm->fm_mapped_extents - 1];
    if (last || e.fe_logical + e.fe_length <= start) return Status::Ok();
    start = e.fe_logical + e.fe_length;
    if (out->size() > 50'000'000) return Status::Io("FIEMAP: implausible extent count", EOVERFLOW);
  }
  return Status::Ok();
}

}  // namespace oans
