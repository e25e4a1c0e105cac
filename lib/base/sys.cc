#include "lib/base/sys.h"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <mutex>
#include <cerrno>
#include <cstring>
#include <memory>

#include "lib/base/fiemap.h"
#include "lib/base/fsinfo.h"
#include "lib/base/meminfo.h"
#include "lib/base/xfs.h"

namespace oans {
namespace {

// Linux reads at most max(read-ahead window, device's largest request) per WILLNEED call
// (force_page_cache_ra), ignoring the rest: btrfs's window is at least 4 MiB, elsewhere
// 128 KiB by default (set lower, the rest is read when first used).
constexpr uint64_t kDefaultReadAhead = 128u << 10;
uint64_t ReadAheadWindow(int fd) {
  struct statfs sfs;
  return ::fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC ? uint64_t(4) << 20 : kDefaultReadAhead;
}

FileStat FromStatx(const struct statx& sx) {
  FileStat st;
  st.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st.ino = sx.stx_ino;
  st.size = sx.stx_size;
  st.mtime_ns = int64_t(sx.stx_mtime.tv_sec) * 1000000000 + sx.stx_mtime.tv_nsec;
  st.ctime_ns = int64_t(sx.stx_ctime.tv_sec) * 1000000000 + sx.stx_ctime.tv_nsec;
  st.mode = sx.stx_mode;
  st.nlink = sx.stx_nlink;
  st.uid = sx.stx_uid;
  st.gid = sx.stx_gid;
  st.mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
  st.blocks = sx.stx_blocks;
  return st;
}

constexpr unsigned kStatxMask = STATX_BASIC_STATS | STATX_MNT_ID;

class PosixSys final : public Sys {
 public:
  Result<int> OpenNoFollow(const std::string& path) override { return OpenPath(path, 0); }

  // OpenNoFollow, with `last_flags` added for the last component.
  static Result<int> OpenPath(const std::string& path, int last_flags) {
    // Paths longer than PATH_MAX are opened a piece at a time, each piece relative to
    // the directory the previous one opened, none following a symlink.
    int dirfd = AT_FDCWD;
    size_t pos = 0;
    while (path.size() - pos >= PATH_MAX - 1) {
      size_t cut = path.rfind('/', pos + PATH_MAX - 2);
      if (cut == std::string::npos || cut <= pos) {
        if (dirfd != AT_FDCWD) ::close(dirfd);
        return Status::Io("open " + path, ENAMETOOLONG);
      }
      long d = Openat2(dirfd, path.substr(pos, cut - pos).c_str(), O_DIRECTORY);
      int e = errno;
      if (dirfd != AT_FDCWD) ::close(dirfd);
      if (d < 0) return Status::Io("open " + path, e);
      dirfd = int(d);
      pos = cut + 1;
    }
    long fd = Openat2(dirfd, path.c_str() + pos, last_flags);
    int e = errno;
    if (dirfd != AT_FDCWD) ::close(dirfd);
    if (fd < 0) return Status::Io("open " + path, e);
    // O_NONBLOCK stays: it keeps a FIFO swapped in for a file from blocking the open and
    // has no effect on reads of regular files.
    return int(fd);
  }

  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (directory) flags |= O_DIRECTORY;
    int fd;
    // O_NOATIME keeps the scan from dirtying inodes; it needs ownership or root.
    do fd = ::openat(dirfd, name.c_str(), flags | O_NOATIME);
    while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == EPERM) fd = ::openat(dirfd, name.c_str(), flags);
    if (fd < 0) return Status::Io("open " + name, errno);
    return fd;
  }

  void Close(int fd) override { if (fd >= 0) ::close(fd); }

  Result<FileStat> Fstat(int fd) override {
    struct statx sx;
    if (::statx(fd, "", AT_EMPTY_PATH, kStatxMask, &sx) != 0) return Status::Io("fstat", errno);
    return FromStatx(sx);
  }

  Result<FileStat> StatAt(int dirfd, const std::string& name) override {
    struct statx sx;
    if (::statx(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, kStatxMask, &sx) != 0)
      return Status::Io("stat " + name, errno);
    return FromStatx(sx);
  }

  Status Fiemap(int fd, std::vector<FiemapExtent>* out) override { return ReadFiemap(fd, 0, UINT64_MAX, out); }
  Status FiemapRange(int fd, uint64_t offset, uint64_t length, std::vector<FiemapExtent>* out) override {
    return ReadFiemap(fd, offset, length, out);
  }

  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    ssize_t n;
    do n = ::pread(fd, buf, len, off_t(offset));
    while (n < 0 && errno == EINTR);
    if (n < 0) return Status::Io("read", errno);
    return size_t(n);
  }

  Status DedupeRange(int src_fd, uint64_t src_offset, uint64_t length,
                     std::vector<DedupeDest>* dests) override {
    if (dests->empty() || dests->size() > kMaxDedupeDests)
      return Status::Invalid("dedupe: destination count out of range");
    const size_t bytes = sizeof(struct file_dedupe_range) + dests->size() * sizeof(struct file_dedupe_range_info);
    std::unique_ptr<char[]> buf(new char[bytes]);
    std::memset(buf.get(), 0, bytes);
    auto* req = reinterpret_cast<struct file_dedupe_range*>(buf.get());
    req->src_offset = src_offset;
    req->src_length = length;
    req->dest_count = uint16_t(dests->size());
    for (size_t i = 0; i < dests->size(); ++i) {
      req->info[i].dest_fd = (*dests)[i].fd;
      req->info[i].dest_offset = (*dests)[i].offset;
    }
    int rc;
    do rc = ::ioctl(src_fd, FIDEDUPERANGE, req);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) return Status::Io("FIDEDUPERANGE", errno);
    for (size_t i = 0; i < dests->size(); ++i) {
      (*dests)[i].status = req->info[i].status;
      (*dests)[i].bytes_deduped = req->info[i].bytes_deduped;
    }
    return Status::Ok();
  }

  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
    batch->clear();
    alignas(8) char buf[32768];
    long n;
    do n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n < 0) return Status::Io("reading directory", errno);
    if (n == 0) return false;
    for (long off = 0; off < n;) {
      struct Linux64 {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[1];
      };
      const auto* d = reinterpret_cast<const Linux64*>(buf + off);
      if (d->d_reclen == 0 || off + d->d_reclen > n) return Status::Io("reading directory", EIO);
      batch->push_back({std::string(d->d_name), d->d_ino, d->d_type});
      off += d->d_reclen;
    }
    return true;
  }

  StorageInfo DetectStorage(const std::vector<std::string>& devices) override { return oans::DetectStorage(devices); }

  uint32_t InodeFlags(int fd) override {
    int flags = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return 0;
    return uint32_t(flags);
  }

  Result<FsIdentity> Identify(int fd) override { return IdentifyFilesystem(fd); }
  Result<FsUsage> Usage(int fd) override {
    struct statfs sfs;
    if (::fstatfs(fd, &sfs) != 0) return Status::Io("statfs", errno);
    FsUsage u;
    const uint64_t unit = sfs.f_frsize ? uint64_t(sfs.f_frsize) : uint64_t(sfs.f_bsize);
    if (sfs.f_blocks > sfs.f_bfree) u.used_bytes = uint64_t(sfs.f_blocks - sfs.f_bfree) * unit;
    if (sfs.f_files > sfs.f_ffree) u.used_inodes = uint64_t(sfs.f_files - sfs.f_ffree);
    return u;
  }
  Result<uint32_t> InodeSize(int fd) override { return XfsInodeSize(fd); }
  Status ReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) override {
    return XfsReadInodeTables(fd, stop, out);
  }
  Result<uint32_t> ReadDirectoryInDiskOrder(int fd) override { return XfsReadDirectoryInDiskOrder(fd); }
  uint64_t MemoryAvailable() override { return MemAvailableBytes(); }
  Result<SpaceUse> MeasureSpace(int fd) override { return oans::MeasureSpace(fd); }
  Status ChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) override {
    return BtrfsChangedInodes(fd, since, first, last, inodes);
  }

  Status TreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit) override {
    return BtrfsTreeSearch(fd, search, visit);
  }
  Result<BtrfsInfo> BtrfsInfoOf(int fd) override { return oans::BtrfsInfoOf(fd); }
  Status Syncfs(int fd) override {
    if (::syncfs(fd) != 0) return Status::Io("syncfs", errno);
    return Status::Ok();
  }
  Status Fsync(int fd) override {
    if (::fsync(fd) != 0) return Status::Io("fsync", errno);
    return Status::Ok();
  }
  Result<std::vector<std::string>> MountPoints() override { return ReadMountPoints("/proc/self/mountinfo"); }
  Result<DeviceMounts> MountsOf(uint64_t dev) override { return ReadDeviceMounts("/proc/self/mountinfo", dev); }
  Result<std::string> DirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino) override {
    return BtrfsDirectoryPath(fd, tree_id, dir_ino);
  }
  Result<std::string> BtrfsDevicePath(int fd, uint64_t devid) override { return oans::BtrfsDevicePath(fd, devid); }
  Result<int> OpenBlockDevice(const std::string& path) override { return OpenBlockDeviceFile(path); }

  uint64_t Seek(int fd, uint64_t offset, bool hole) override {
    off_t r = ::lseek(fd, off_t(offset), hole ? SEEK_HOLE : SEEK_DATA);
    if (r < 0) return errno == ENXIO ? UINT64_MAX : (hole ? UINT64_MAX : offset);  // unsupported: all data
    return uint64_t(r);
  }

  void WillNeed(int fd, uint64_t offset, uint64_t length) override {
    // In calls no larger than one call reads (ReadAheadWindow), to the end of the file
    // at most (a damaged plan's range may claim far more).
    const uint64_t chunk = length > kDefaultReadAhead ? ReadAheadWindow(fd) : std::max<uint64_t>(length, 1);
    struct stat st;
    if (length > chunk && ::fstat(fd, &st) == 0)
      length = offset >= uint64_t(st.st_size) ? 1 : std::min(length, uint64_t(st.st_size) - offset);
    uint64_t done = 0;
    do {
      const uint64_t n = length ? std::min(chunk, length - done) : 0;  // 0: to the end, as given
      ::posix_fadvise(fd, off_t(offset + done), off_t(n), POSIX_FADV_WILLNEED);
      done += n;
    } while (done < length);
  }
  Result<size_t> Populate(int fd, uint64_t offset, size_t length, std::vector<char>* buffer) override {
    // One /dev/null for the process; where it cannot be opened or spliced to, Pread.
    static const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      for (;;) {
        off_t at = off_t(offset);
        ssize_t n = ::sendfile(null_fd, fd, &at, std::min<size_t>(length, size_t(1) << 30));
        if (n >= 0) return size_t(n);
        if (errno != EINTR) break;
      }
      if (errno != EINVAL && errno != ENOSYS) return Status::Io("sendfile", errno);
    }
    return Sys::Populate(fd, offset, length, buffer);
  }
  void DontNeed(int fd, uint64_t offset, uint64_t length) override {
    ::posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_DONTNEED);
  }

  Result<int> OpenDirNoFollow(const std::string& path) override { return OpenPath(path, O_DIRECTORY); }

  Result<std::vector<std::pair<std::string, std::string>>> Xattrs(int fd) override {
    std::vector<std::pair<std::string, std::string>> out;
    std::vector<char> names;
    for (;;) {  // the list may grow between the size query and the read
      ssize_t n = ::flistxattr(fd, nullptr, 0);
      if (n < 0) {
        if (errno == ENOTSUP) return out;
        return Status::Io("listxattr", errno);
      }
      names.resize(size_t(n) + 1);
      ssize_t got = ::flistxattr(fd, names.data(), names.size());
      if (got >= 0) {
        names.resize(size_t(got));
        break;
      }
      if (errno != ERANGE) return Status::Io("listxattr", errno);
    }
    for (size_t pos = 0; pos < names.size();) {
      std::string name(names.data() + pos);
      pos += name.size() + 1;
      if (name.empty()) continue;
      std::string value;
      for (;;) {
        ssize_t n = ::fgetxattr(fd, name.c_str(), nullptr, 0);
        if (n < 0) {
          if (errno == ENODATA) break;  // removed meanwhile
          return Status::Io("getxattr " + name, errno);
        }
        value.resize(size_t(n));
        ssize_t got = ::fgetxattr(fd, name.c_str(), value.data(), value.size());
        if (got >= 0) {
          value.resize(size_t(got));
          out.emplace_back(std::move(name), std::move(value));
          break;
        }
        if (errno != ERANGE) return Status::Io("getxattr " + name, errno);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Status SetLease(int fd, bool read) override {
    // The kernel signals a lease holder (SIGIO, whose default action ends the process)
    // when someone asks to break its lease; the apply polls LeaseHeld instead.
    static std::once_flag ignore_sigio;
    std::call_once(ignore_sigio, [] {
      struct sigaction old;
      if (::sigaction(SIGIO, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGIO, SIG_IGN);
    });
    if (::fcntl(fd, F_SETLEASE, read ? F_RDLCK : F_UNLCK) != 0) return Status::Io("F_SETLEASE", errno);
    return Status::Ok();
  }

  bool LeaseHeld(int fd) override { return ::fcntl(fd, F_GETLEASE) == F_RDLCK; }

  Status LinkAt(int fd, int dirfd, const std::string& name) override {
    // AT_EMPTY_PATH links the open inode itself, not whatever a path names now.
    if (::linkat(fd, "", dirfd, name.c_str(), AT_EMPTY_PATH) != 0) return Status::Io("link " + name, errno);
    return Status::Ok();
  }

  Result<int> OpenTmpfile(int dirfd) override {
    int fd;
    do fd = ::openat(dirfd, ".", O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? Result<int>(Status::Io("create a temporary file", errno)) : Result<int>(fd);
  }

  Status SetInodeFlags(int fd, uint32_t flags) override {
    int f = int(flags);
    return ::ioctl(fd, FS_IOC_SETFLAGS, &f) == 0 ? Status::Ok() : Status::Io("set inode flags", errno);
  }

  Status Pwrite(int fd, const void* buf, size_t len, uint64_t offset) override {
    const char* p = static_cast<const char*>(buf);
    while (len > 0) {
      ssize_t n = ::pwrite(fd, p, len, off_t(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Io("write", errno);
      if (n == 0) return Status::Io("write", EIO);
      p += n, len -= size_t(n), offset += uint64_t(n);
    }
    return Status::Ok();
  }

  Status ExchangeAt(int dirfd, const std::string& a, const std::string& b) override {
    if (::renameat2(dirfd, a.c_str(), dirfd, b.c_str(), RENAME_EXCHANGE) != 0)
      return Status::Io("exchange " + a + " and " + b, errno);
    return Status::Ok();
  }

  Status UnlinkAt(int dirfd, const std::string& name) override {
    if (::unlinkat(dirfd, name.c_str(), 0) != 0) return Status::Io("unlink " + name, errno);
    return Status::Ok();
  }

 private:
  static long Openat2(int dirfd, const char* path, int extra_flags) {
    struct open_how how;
    std::memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | unsigned(extra_flags);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    // O_NOATIME keeps reads from dirtying inodes (a scan following btrfs changes would
    // see its own reads as changes); it needs ownership or root.
    how.flags |= O_NOATIME;
    long fd;
    do fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == EPERM) {
      how.flags &= ~uint64_t(O_NOATIME);
      do fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
      while (fd < 0 && errno == EINTR);
    }
    return fd;
  }
};

}  // namespace

Sys& DefaultSys() {
  static PosixSys sys;
  return sys;
}

}  // namespace oans
