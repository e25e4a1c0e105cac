#include "lib/base/xfs.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <xfs/xfs.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <vector>

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

namespace {

// A data extent of a directory, in 512-byte units: where it is in the directory and on disk.
struct DirExtent {
  int64_t offset, block, length;
};

// Where XFS puts a directory's leaf and free-space blocks: after its data blocks.
constexpr int64_t kDirLeafOffset = (int64_t(32) << 30) / 512;
constexpr uint32_t kMaxExtents = 1024;  // a directory of more is listed as it lies
constexpr int64_t kMaxBytes = int64_t(64) << 20;  // and one of more data than this

// The directory's data extents, by XFS_IOC_GETBMAPX, in logical order; none if unmapped.
Result<std::vector<DirExtent>> DirDataExtents(int fd) {
  constexpr int kBatch = 64;
  std::vector<getbmapx> map(kBatch + 1);
  std::vector<DirExtent> out;
  int64_t from = 0;
  while (out.size() < kMaxExtents) {
    map.assign(kBatch + 1, getbmapx{});
    map[0].bmv_offset = from;
    map[0].bmv_length = -1;  // to the end
    map[0].bmv_count = kBatch + 1;
    if (::ioctl(fd, XFS_IOC_GETBMAPX, map.data()) != 0) {
      const int e = errno;
      if (e == ENOTTY || e == EINVAL || e == EOPNOTSUPP) return Status::Unsupported("XFS block map");
      return Status::Io("XFS_IOC_GETBMAPX", e);
    }
    const int n = map[0].bmv_entries;
    if (n < 0 || n > kBatch) return Status::Unsupported("XFS block map of this form");
    for (int i = 1; i <= n; ++i) {
      const getbmapx& x = map[size_t(i)];
      if (x.bmv_offset >= kDirLeafOffset) return out;
      if (x.bmv_offset < from || x.bmv_length <= 0) return Status::Unsupported("XFS block map of this form");
      if (x.bmv_block >= 0) out.push_back({x.bmv_offset, x.bmv_block, x.bmv_length});
      from = x.bmv_offset + x.bmv_length;
    }
    if (n < kBatch) return out;
  }
  return std::vector<DirExtent>();  // more extents than kMaxExtents: listed as they lie
}

// Lists the directory from data extent `x`'s first byte until past its end, dropping
// the entries: XFS reads its blocks then.
Status ListExtent(int fd, const DirExtent& x) {
  const int64_t from = x.offset * 512 / 8, end = (x.offset + x.length) * 512 / 8;
  if (::lseek(fd, from, SEEK_SET) != from) return Status::Io("seeking in a directory", errno);
  alignas(8) char buf[4096];
  // A block of 4 KiB or more holds at most 4 KiB of names: a call or two a block.
  for (int64_t calls = 0; calls < 2 * (x.length / 8 + 1) + 2; ++calls) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io("reading directory", errno);
    if (n == 0 || ::lseek(fd, 0, SEEK_CUR) >= end) break;
  }
  return Status::Ok();
}


// The directory's data extents read in disk order, when they are out of order and not
// too many; the directory is then set back at its start. The extents read (0: none).
Result<uint32_t> ReadOutOfOrder(int fd, std::vector<DirExtent>* extents) {
  auto by_place = [](const DirExtent& a, const DirExtent& b) { return a.block < b.block; };
  int64_t bytes = 0;
  for (const auto& x : *extents) bytes += x.length * 512;
  // In order already, or too big to stay cached until its listing: listed as it lies.
  if (extents->size() < 2 || bytes > kMaxBytes || std::is_sorted(extents->begin(), extents->end(), by_place))
    return 0u;
  std::sort(extents->begin(), extents->end(), by_place);
  // A hint: what a failed read leaves is read by the listing.
  uint32_t read = 0;
  for (const auto& x : *extents) {
    if (!ListExtent(fd, x).ok()) break;
    ++read;
  }
  // Back to the start, for the listing, whatever happened above.
  if (::lseek(fd, 0, SEEK_SET) != 0) return Status::Io("seeking back to the start of the directory", errno);
  return read;
}

}  // namespace

Result<uint32_t> XfsReadDirectoryInDiskOrder(int fd) {
  auto extents = DirDataExtents(fd);
  if (!extents.ok() && extents.status().IsUnsupported()) return extents.status();
  Result<uint32_t> read = extents.ok() ? ReadOutOfOrder(fd, &*extents) : Result<uint32_t>(0u);
  struct stat st;
  (void)::fstatat(fd, kLookupAhead, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);  // reads the leaf block
  return read;
}

}  // namespace oans
