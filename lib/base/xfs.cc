#include "lib/base/xfs.h"

#include <sys/ioctl.h>
#include <xfs/xfs.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

namespace oans {

Result<uint32_t> XfsInodeSize(int fd) {
  struct xfs_fsop_geom geometry = {};
  if (::ioctl(fd, XFS_IOC_FSGEOMETRY, &geometry) != 0) {
    const int e = errno;
    if (e == ENOTTY || e == EINVAL || e == EOPNOTSUPP) return Status::Unsupported("XFS geometry");
    return Status::Io("XFS_IOC_FSGEOMETRY", e);
  }
  return uint32_t(geometry.inodesize);
}

Status XfsReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) {
  // 1,024 records a call (192 KiB of them): 16 inode chunks of 64.
  constexpr uint32_t kBatch = 1024;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<xfs_bulkstat_req, Free> req(
      static_cast<xfs_bulkstat_req*>(std::calloc(1, XFS_BULKSTAT_REQ_SIZE(kBatch))));
  if (!req) return Status::Io("bulkstat buffer", ENOMEM);
  req->hdr.ino = 0;  // from the first inode; the kernel moves it past each batch
  while (!(stop && stop())) {
    req->hdr.icount = kBatch;
    req->hdr.ocount = 0;
    if (::ioctl(fd, XFS_IOC_BULKSTAT, req.get()) != 0) {
      const int e = errno;
      if (e == ENOTTY || e == EOPNOTSUPP) return Status::Unsupported("XFS bulkstat");
      return Status::Io("XFS_IOC_BULKSTAT", e);
    }
    if (req->hdr.ocount == 0) break;
    out->inodes += req->hdr.ocount;
  }
  return Status::Ok();
}

}  // namespace oans
