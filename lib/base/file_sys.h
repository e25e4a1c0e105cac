// FileSys: the system calls on files that every stage makes: open without following
// symlinks, stat, read, FIEMAP, dedupe, directory reads, cache hints, usage, storage.
// Part of Sys (lib/base/sys.h). Methods return errors as Status and never throw.
// A default that cannot do its job returns Status::Unsupported; the hints do nothing.
// Implementations must be safe to call from several threads at once.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

struct FileStat {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0, gid = 0;
  uint64_t mnt_id = 0;  // 0 when the kernel does not report it
  uint64_t blocks = 0;  // 512-byte blocks allocated
};

struct FiemapExtent {
  uint64_t logical = 0;
  uint64_t physical = 0;
  uint64_t length = 0;
  uint32_t flags = 0;
};

// FIEMAP extent flags we act on (linux/fiemap.h).
inline constexpr uint32_t kExtentLast = 0x1;
inline constexpr uint32_t kExtentUnknown = 0x2;
inline constexpr uint32_t kExtentDelalloc = 0x4;
inline constexpr uint32_t kExtentEncoded = 0x8;
inline constexpr uint32_t kExtentInline = 0x200;
inline constexpr uint32_t kExtentUnwritten = 0x800;
inline constexpr uint32_t kExtentShared = 0x2000;

struct DedupeDest {
  int fd = -1;
  uint64_t offset = 0;
  // Results, filled by DedupeRange:
  int32_t status = 0;       // 0 = same, 1 = differs, < 0 = -errno for this destination
  uint64_t bytes_deduped = 0;
};

inline constexpr int32_t kDedupeSame = 0;
inline constexpr int32_t kDedupeDiffers = 1;

struct FsIdentity {
  std::string type;       // "btrfs", "xfs", "ext4", or the magic in hex
  std::string uuid;       // "" when unknown
  uint64_t subvolume = 0; // btrfs subvolume id
  // btrfs: the subvolume's UUID and its generation (the transaction that last changed
  // it) when identified; "" and 0 elsewhere. Every later change to a file's extents
  // belongs to a transaction at least as new, which ChangedInodes can find.
  std::string subvolume_uuid;
  uint64_t generation = 0;
  bool read_only = false;  // btrfs: a read-only subvolume (a snapshot, as most are)
  // btrfs: a snapshot's source subvolume UUID ("" when not a snapshot), and the
  // transaction that created the subvolume.
  std::string parent_uuid;
  uint64_t created = 0;
  uint32_t block_size = 4096;
  std::vector<std::string> devices;  // /sys block device names backing it ("loop0")
};

// One directory entry as getdents64 returns it.
struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  unsigned char type = 0;  // DT_REG, DT_DIR, ... (DT_UNKNOWN when the filesystem does not say)
};

// What a sweep of a filesystem's inode tables read (FileSys::ReadInodeTables).
struct InodeTables {
  uint64_t inodes = 0;  // inodes in use met
};

// How often a device is mounted (FileSys::MountsOf).
struct DeviceMounts {
  uint32_t count = 0;
  bool subtree = false;  // one mount shows a directory of it, not its root
};

// What statfs says a filesystem holds. used_inodes is 0 where the filesystem does not
// count inodes (btrfs).
struct FsUsage {
  uint64_t used_bytes = 0;
  uint64_t used_inodes = 0;
};

enum class StorageKind { kSsd, kHdd };
// What a tool was told of the storage: detect it (DetectStorage), or take it as said.
enum class StorageChoice { kAuto, kSsd, kHdd };

struct StorageInfo {
  StorageKind kind = StorageKind::kSsd;
  bool flagged_rotational = false;  // what sysfs says
  bool measured = false;            // a seek measurement decided
  double seek_ms = 0;               // median random read latency measured
  std::string reason;               // one line for the user
};

class FileSys {
 public:
  virtual ~FileSys() = default;

  // Opens for reading without following a symlink in any component of `path`.
  virtual Result<int> OpenNoFollow(const std::string& path) = 0;
  // openat(dirfd, name, O_RDONLY|O_NOFOLLOW|...); `directory` adds O_DIRECTORY.
  virtual Result<int> OpenAt(int dirfd, const std::string& name, bool directory) = 0;
  virtual void Close(int fd) = 0;
  virtual Result<FileStat> Fstat(int fd) = 0;
  // lstat-like: never follows the last component.
  virtual Result<FileStat> StatAt(int dirfd, const std::string& name) = 0;
  // Full extent map, restarting after the last extent until FIEMAP_EXTENT_LAST.
  virtual Status Fiemap(int fd, std::vector<FiemapExtent>* out) = 0;
  // The extents overlapping [offset, offset + length). The default filters Fiemap's.
  virtual Status FiemapRange(int fd, uint64_t offset, uint64_t length, std::vector<FiemapExtent>* out) {
    OANS_RETURN_IF_ERROR(Fiemap(fd, out));
    std::vector<FiemapExtent> in;
    in.swap(*out);
    for (const auto& e : in)
      if (e.logical >= offset ? e.logical - offset < length : e.logical + e.length > offset) out->push_back(e);
    return Status::Ok();
  }
  // Reads up to len bytes; returns bytes read (0 at EOF). Retries EINTR.
  virtual Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) = 0;
  // FIDEDUPERANGE for up to 127 destinations. A whole-call failure is the Status;
  // per-destination outcomes are in dests[i].status / bytes_deduped.
  virtual Status DedupeRange(int src_fd, uint64_t src_offset, uint64_t length,
                             std::vector<DedupeDest>* dests) = 0;
  // The next entries of the directory open as fd (getdents64; "." and ".." included as
  // the kernel returns them) into *batch, replacing what it held; false at the end.
  virtual Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) = 0;
  // Whether the devices behind a filesystem spin (lib/base/fsinfo.h, DetectStorage).
  virtual StorageInfo DetectStorage(const std::vector<std::string>& devices) {
    (void)devices;
    StorageInfo info;
    info.reason = "storage not detected here; assuming ssd";
    return info;
  }
  // FS_IOC_GETFLAGS; 0 when unsupported.
  virtual uint32_t InodeFlags(int fd) = 0;
  virtual Result<FsIdentity> Identify(int fd) = 0;
  // fstatfs: the space and inodes in use on fd's filesystem. The default knows nothing.
  virtual Result<FsUsage> Usage(int fd) {
    (void)fd;
    return Status::Unsupported("filesystem usage");
  }
  // The bytes one inode takes on disk on fd's filesystem: XFS's geometry; Unsupported
  // elsewhere, as by this default.
  virtual Result<uint32_t> InodeSize(int fd) {
    (void)fd;
    return Status::Unsupported("inode size");
  }
  // Reads the inode tables of fd's filesystem once, in disk order, so that the stat and
  // open calls that follow find them in the kernel's cache: XFS's bulkstat, which needs
  // CAP_SYS_ADMIN. `stop` is asked between calls. Unsupported elsewhere, as by this default.
  virtual Status ReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) {
    (void)fd, (void)stop, (void)out;
    return Status::Unsupported("reading inode tables");
  }
  // Reads the data blocks of the directory open as fd in disk order ahead of its
  // listing, and its leaf block, and leaves it at its start: XFS (lib/base/xfs.h). The extents read that
  // way (0: in order already). Unsupported elsewhere, as by this default; another error
  // when the directory could not be set back at its start.
  virtual Result<uint32_t> ReadDirectoryInDiskOrder(int fd) {
    (void)fd;
    return Status::Unsupported("reading a directory in disk order");
  }
  // MemAvailable of /proc/meminfo, in bytes; 0 when not known, as by this default.
  virtual uint64_t MemoryAvailable() { return 0; }
  // lseek(SEEK_DATA) (hole = false) or lseek(SEEK_HOLE) (hole = true) from `offset`;
  // UINT64_MAX when there is no further data. The default knows of no holes.
  virtual uint64_t Seek(int fd, uint64_t offset, bool hole) {
    (void)fd;
    return hole ? UINT64_MAX : offset;
  }
  // The mount points of this process's mount namespace (/proc/self/mountinfo), as
  // absolute paths. The default knows none.
  virtual Result<std::vector<std::string>> MountPoints() { return std::vector<std::string>{}; }
  // How this process's mount namespace mounts device `dev` (st_dev). The default: once,
  // at its root.
  virtual Result<DeviceMounts> MountsOf(uint64_t dev) {
    (void)dev;
    return DeviceMounts{1, false};
  }
  // syncfs(2) on fd's filesystem: written data reaches disk (and btrfs inserts its
  // checksums). The default does nothing.
  virtual Status Syncfs(int fd) {
    (void)fd;
    return Status::Ok();
  }
  // fsync(2) on fd: for a directory, its entries' changes reach disk (a commit of the
  // filesystem's journal; unlike syncfs, no metadata block is written in place). The
  // default does nothing.
  virtual Status Fsync(int fd) {
    (void)fd;
    return Status::Ok();
  }
  // Asks the kernel to start reading [offset, offset + length) into the page cache
  // (POSIX_FADV_WILLNEED, in calls no larger than the kernel's read-ahead window, which
  // caps each call), without waiting; a hint only. The default does nothing.
  virtual void WillNeed(int fd, uint64_t offset, uint64_t length) { (void)fd, (void)offset, (void)length; }
  // Reads up to `length` bytes at `offset` into the page cache and waits for them, for
  // their next reader; returns the bytes read (0 at EOF). The real one has the kernel
  // splice them to /dev/null (sendfile: no copy to user space); this default reads them
  // through `buffer` with Pread.
  virtual Result<size_t> Populate(int fd, uint64_t offset, size_t length, std::vector<char>* buffer) {
    return Pread(fd, buffer->data(), std::min(length, buffer->size()), offset);
  }
  // Tells the kernel [offset, offset + length) is not needed again soon
  // (POSIX_FADV_DONTNEED): its clean pages leave the page cache, dirty ones are written
  // back first and stay. A hint only; the default does nothing.
  virtual void DontNeed(int fd, uint64_t offset, uint64_t length) { (void)fd, (void)offset, (void)length; }
};

}  // namespace oans
