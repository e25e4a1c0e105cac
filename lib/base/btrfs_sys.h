// BtrfsSys: the btrfs ioctls oans makes (lib/btrfs/search.h, lib/btrfs/space.h): tree
// searches, changed inodes, filesystem facts, directory paths, device paths, space in
// use, and block devices read past the page cache. Part of Sys (lib/base/sys.h).
// Every default returns Status::Unsupported. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/btrfs/search.h"
#include "lib/btrfs/space.h"

namespace oans {

class BtrfsSys {
 public:
  virtual ~BtrfsSys() = default;

  // The space fd's filesystem has in use, after a commit (lib/btrfs/space.h). The
  // default knows nothing.
  virtual Result<SpaceUse> MeasureSpace(int fd) {
    (void)fd;
    return Status::Unsupported("measuring filesystem space");
  }
  // btrfs: the inode numbers in [first, last] (sorted, unique) of the fd's subvolume
  // whose inode item or extent items lie in metadata written in transaction `since` or
  // later: a superset of the files whose extent map or flags may have changed since
  // then. Needs CAP_SYS_ADMIN; elsewhere, or when refused, an error and nothing is known.
  virtual Status ChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) {
    (void)fd, (void)since, (void)first, (void)last, (void)inodes;
    return Status::Unsupported("changed-inode search");
  }
  // btrfs tree searches and facts (lib/btrfs/search.h); CAP_SYS_ADMIN. Elsewhere,
  // or when refused, an error.
  virtual Status TreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit) {
    (void)fd, (void)search, (void)visit;
    return Status::Unsupported("btrfs tree search");
  }
  virtual Result<BtrfsInfo> BtrfsInfoOf(int fd) {
    (void)fd;
    return Status::Unsupported("BTRFS_IOC_FS_INFO");
  }
  virtual Result<std::string> DirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino) {
    (void)fd, (void)tree_id, (void)dir_ino;
    return Status::Unsupported("BTRFS_IOC_INO_LOOKUP");
  }
  // The path of device `devid` of fd's btrfs filesystem (BTRFS_IOC_DEV_INFO).
  virtual Result<std::string> BtrfsDevicePath(int fd, uint64_t devid) {
    (void)fd, (void)devid;
    return Status::Unsupported("BTRFS_IOC_DEV_INFO");
  }
  // Opens a block device read-only for reads that bypass its page cache (O_DIRECT:
  // buffers, offsets and lengths 4 KiB-aligned); an error when `path` is not one.
  virtual Result<int> OpenBlockDevice(const std::string& path) {
    (void)path;
    return Status::Unsupported("opening a block device");
  }
};

}  // namespace oans
