#include "lib/base/fsinfo.h"

#include "lib/base/fd.h"
#include "lib/btrfs/search.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace oans {
namespace {

#ifndef FS_IOC_GETFSUUID
struct fsuuid2 {
  uint8_t len;
  uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

std::string UuidString(const uint8_t* u) {
  char buf[40];
  std::snprintf(buf, sizeof buf,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

std::string ReadLine(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// The whole-disk name for a partition ("sda1" -> "sda"); unchanged otherwise.
std::string WholeDisk(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::canonical("/sys/class/block/" + name, ec);
  if (ec) return name;
  if (fs::exists(p / "partition")) return p.parent_path().filename().string();
  return name;
}

// XFS_IOC_FSGEOMETRY_V1 (xfs_fs.h; every kernel with XFS has it): the geometry's flags
// are at byte 92 of its 112, XFS_FSOP_GEOM_FLAGS_REFLINK among them.
constexpr unsigned long kXfsGeometryV1 = (2ul << 30) | (112ul << 16) | ('X' << 8) | 100;
constexpr size_t kXfsGeometryFlagsAt = 92;
constexpr uint32_t kXfsGeometryReflink = 1u << 20;

// 1: XFS made with reflink, 0: without, -1: cannot tell.
int XfsReflink(int fd) {
  alignas(8) unsigned char geometry[112] = {};
  if (::ioctl(fd, kXfsGeometryV1, geometry) != 0) return -1;
  uint32_t flags;
  std::memcpy(&flags, geometry + kXfsGeometryFlagsAt, sizeof flags);
  return (flags & kXfsGeometryReflink) ? 1 : 0;
}

}  // namespace

std::string NoReflinkOn(int fd) {
  struct statfs sfs;
  if (::fstatfs(fd, &sfs) != 0) return "";
  switch (static_cast<unsigned long>(sfs.f_type)) {
    case EXT4_SUPER_MAGIC: return "ext4";  // ext2 and ext3 too: one magic
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case MSDOS_SUPER_MAGIC: return "FAT";
    case XFS_SUPER_MAGIC: return XfsReflink(fd) == 0 ? "XFS made without reflink" : "";
    default: return "";
  }
}

Status CheckCanShareData(int fd, const std::string& path, bool hardlink) {
  if (hardlink) return Status::Ok();
  const std::string what = NoReflinkOn(fd);
  if (what.empty()) return Status::Ok();
  const bool xfs = what.rfind("XFS", 0) == 0;
  return Status::Invalid(path + " is on " + what + ", which cannot share data between files: give --link=hard " +
                         "to replace identical files by hardlinks instead" +
                         (xfs ? " (only an XFS made with mkfs.xfs -m reflink=1 can share data)" : ""));
}

Status CheckPathCanShareData(const std::string& path, bool hardlink) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() && errno == ENOTDIR) {
    const size_t cut = path.find_last_of('/');
    const std::string dir = cut == std::string::npos ? "." : cut == 0 ? "/" : path.substr(0, cut);
    fd = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  if (!fd.valid()) return Status::Io("opening " + path, errno);
  return CheckCanShareData(fd.get(), path, hardlink);
}

const char* StorageKindName(StorageKind k) { return k == StorageKind::kHdd ? "hdd" : "ssd"; }

Result<std::vector<std::string>> ReadMountPoints(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::Io("reading " + path, errno ? errno : ENOENT);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) {
    // mount id, parent id, major:minor, root, mount point, ...
    size_t at = 0;
    for (int field = 0; field < 4 && at != std::string::npos; ++field) at = line.find(' ', at == 0 ? 0 : at + 1);
    if (at == std::string::npos) return Status::Corrupt(path + ": a line without a mount point: " + line);
    const size_t end = line.find(' ', at + 1);
    const std::string escaped = line.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    std::string p;
    for (size_t i = 0; i < escaped.size(); ++i) {
      auto octal = [&](size_t k) { return k < escaped.size() && escaped[k] >= '0' && escaped[k] <= '7'; };
      if (escaped[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
        p += char(std::stoi(escaped.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        p += escaped[i];
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<DeviceMounts> ReadDeviceMounts(const std::string& path, uint64_t dev) {
  std::ifstream f(path);
  if (!f) return Status::Io("reading " + path, errno ? errno : ENOENT);
  DeviceMounts out;
  for (std::string line; std::getline(f, line);) {
    // mount id, parent id, major:minor, root, ...
    unsigned id = 0, parent = 0, major = 0, minor = 0;
    char root[2] = {0, 0};
    if (std::sscanf(line.c_str(), "%u %u %u:%u %1s", &id, &parent, &major, &minor, root) != 5)
      return Status::Corrupt(path + ": a line without a device and a root: " + line);
    if (makedev(major, minor) != dev) continue;
    out.count++;
    const size_t at = line.find(' ', line.find(':'));
    if (line.compare(at, 3, " / ") != 0) out.subtree = true;
  }
  return out;
}

Result<FsIdentity> IdentifyFilesystem(int fd) {
  FsIdentity id;
  struct statfs sfs;
  if (::fstatfs(fd, &sfs) != 0) return Status::Io("statfs", errno);
  id.block_size = uint32_t(sfs.f_bsize);
  switch (static_cast<unsigned long>(sfs.f_type)) {
    case BTRFS_SUPER_MAGIC: id.type = "btrfs"; break;
    case XFS_SUPER_MAGIC: id.type = "xfs"; break;
    case EXT4_SUPER_MAGIC: id.type = "ext4"; break;
    case TMPFS_MAGIC: id.type = "tmpfs"; break;
    default: {
      char buf[24];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(sfs.f_type));
      id.type = buf;
    }
  }
  if (id.type == "btrfs") {
    const BtrfsIdentity b = BtrfsIdentityOf(fd);
    if (!b.uuid.empty()) {
      id.uuid = b.uuid;
      if (b.sector_size) id.block_size = b.sector_size;
      namespace fs = std::filesystem;
      std::error_code ec;
      for (auto& e : fs::directory_iterator("/sys/fs/btrfs/" + id.uuid + "/devices", ec))
        id.devices.push_back(WholeDisk(e.path().filename().string()));
    }
    id.subvolume = b.subvolume;
    id.subvolume_uuid = b.subvolume_uuid;
    id.generation = b.generation;
    id.read_only = b.read_only;
    id.parent_uuid = b.parent_uuid;
    id.created = b.created;
  } else {
    struct fsuuid2 u;
    std::memset(&u, 0, sizeof u);
    u.len = 16;
    if (::ioctl(fd, FS_IOC_GETFSUUID, &u) == 0 && u.len == 16) {
      id.uuid = UuidString(u.uuid);
    } else {
      char buf[40];
      int v[2];
      std::memcpy(v, &sfs.f_fsid, sizeof v);
      std::snprintf(buf, sizeof buf, "fsid:%08x%08x", unsigned(v[0]), unsigned(v[1]));
      id.uuid = buf;
    }
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      std::error_code ec;
      auto p = std::filesystem::canonical(
          "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)), ec);
      if (!ec) id.devices.push_back(WholeDisk(p.filename().string()));
    }
  }
  return id;
}

Result<int> OpenBlockDeviceFile(const std::string& path) {
  // Looked at before it is opened for reading: opening a character device or a FIFO
  // can have effects of its own.
  Fd at(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!at.valid()) return Status::Io("open " + path, errno);
  struct stat st;
  if (::fstat(at.get(), &st) != 0 || !S_ISBLK(st.st_mode)) return Status::Invalid(path + " is not a block device");
  const std::string self = "/proc/self/fd/" + std::to_string(at.get());
  int fd;
  do fd = ::open(self.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::Io("open " + path, errno);
  return fd;
}

StorageInfo DetectStorage(const std::vector<std::string>& devices) {
  StorageInfo info;
  std::string flagged;
  for (const auto& d : devices)
    if (ReadLine("/sys/class/block/" + d + "/queue/rotational") == "1") flagged = d;
  if (flagged.empty()) {
    info.reason = devices.empty() ? "no block device found; assuming ssd" : "sysfs: non-rotational";
    return info;
  }
  info.flagged_rotational = true;
  // Time scattered direct reads; a spinning disk seeks for milliseconds.
  auto opened = OpenBlockDeviceFile("/dev/" + flagged);  // a block device only, read
  Fd fd(opened.ok() ? *opened : -1);
  uint64_t size = 0;
  std::string sz = ReadLine("/sys/class/block/" + flagged + "/size");
  if (!sz.empty()) size = std::strtoull(sz.c_str(), nullptr, 10) * 512;
  if (!fd.valid() || size < (64u << 20)) {
    info.kind = StorageKind::kHdd;
    info.reason = "sysfs: rotational (" + flagged + "), not measurable";
    return info;
  }
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) {
    info.kind = StorageKind::kHdd;
    return info;
  }
  std::mt19937_64 rng(12345);
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    uint64_t off = (rng() % (size / 4096)) * 4096;
    auto t0 = std::chrono::steady_clock::now();
    ssize_t n = ::pread(fd.get(), buf, 4096, off_t(off));
    auto t1 = std::chrono::steady_clock::now();
    if (n == 4096) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::free(buf);
  fd.reset();
  if (ms.empty()) {
    info.kind = StorageKind::kHdd;
    info.reason = "sysfs: rotational (" + flagged + ")";
    return info;
  }
  std::sort(ms.begin(), ms.end());
  info.measured = true;
  info.seek_ms = ms[ms.size() / 2];
  info.kind = info.seek_ms >= 2.0 ? StorageKind::kHdd : StorageKind::kSsd;
  char line[160];
  std::snprintf(line, sizeof line, "sysfs says rotational (%s); random read %.2f ms -> %s", flagged.c_str(),
                info.seek_ms, StorageKindName(info.kind));
  info.reason = line;
  return info;
}

}  // namespace oans
