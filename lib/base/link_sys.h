// LinkSys: hardlink mode's primitives (the policy lives in lib/apply/hardlink.h):
// leases, links, renames, unlinks, unnamed files, extended attributes, inode flags and
// writes. Part of Sys (lib/base/sys.h). Every default returns Status::Unsupported,
// except Xattrs (none) and LeaseHeld (false). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace oans {

class LinkSys {
 public:
  virtual ~LinkSys() = default;

  // Opens a directory for reading without following a symlink in any component.
  virtual Result<int> OpenDirNoFollow(const std::string& path) {
    (void)path;
    return Status::Unsupported("opening a directory");
  }
  // Every extended attribute of the open file (ACLs and security labels included), as
  // sorted (name, value) pairs.
  virtual Result<std::vector<std::pair<std::string, std::string>>> Xattrs(int fd) {
    (void)fd;
    return std::vector<std::pair<std::string, std::string>>{};
  }
  // F_SETLEASE with F_RDLCK (read = true) or F_UNLCK on a descriptor opened read-only. A
  // read lease is refused (EAGAIN) while any process has the file open for writing, and
  // is broken (LeaseHeld turns false) when one opens or truncates it later; that opener
  // waits until the lease is given up. The lease-break signal (SIGIO) is ignored.
  virtual Status SetLease(int fd, bool read) {
    (void)fd, (void)read;
    return Status::Unsupported("file leases");
  }
  // True while a read lease set on fd is held and no one has asked to break it.
  virtual bool LeaseHeld(int fd) {
    (void)fd;
    return false;
  }
  // linkat(fd, "", dirfd, name, AT_EMPTY_PATH): a new name for the open inode itself.
  virtual Status LinkAt(int fd, int dirfd, const std::string& name) {
    (void)fd, (void)dirfd;
    return Status::Unsupported("link " + name);
  }
  // renameat2(RENAME_EXCHANGE): swaps two names of one directory atomically.
  virtual Status ExchangeAt(int dirfd, const std::string& a, const std::string& b) {
    (void)dirfd, (void)b;
    return Status::Unsupported("exchange " + a);
  }
  virtual Status UnlinkAt(int dirfd, const std::string& name) {
    (void)dirfd;
    return Status::Unsupported("unlink " + name);
  }
  // A new regular file without a name (O_TMPFILE, mode 0600, never linkable) on the
  // filesystem of directory `dirfd`, open for reading and writing; it is removed when closed.
  virtual Result<int> OpenTmpfile(int dirfd) {
    (void)dirfd;
    return Status::Unsupported("creating a temporary file");
  }
  // FS_IOC_SETFLAGS: sets the inode flags of an open file (InodeFlags reads them).
  virtual Status SetInodeFlags(int fd, uint32_t flags) {
    (void)fd, (void)flags;
    return Status::Unsupported("setting inode flags");
  }
  // Writes all `len` bytes at `offset`; retries EINTR and short writes.
  virtual Status Pwrite(int fd, const void* buf, size_t len, uint64_t offset) {
    (void)fd, (void)buf, (void)len, (void)offset;
    return Status::Unsupported("writing");
  }
};

}  // namespace oans
