#include "lib/btrfs/space.h"

#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "lib/btrfs/search.h"

namespace oans {
namespace {

// The space infos of a btrfs filesystem: one per type and profile.
Result<std::vector<btrfs_ioctl_space_info>> SpaceInfos(int fd) {
  btrfs_ioctl_space_args probe{};
  if (::ioctl(fd, BTRFS_IOC_SPACE_INFO, &probe) != 0) return Status::Io("BTRFS_IOC_SPACE_INFO", errno);
  const uint64_t n = probe.total_spaces;
  std::vector<char> buf(sizeof(btrfs_ioctl_space_args) + n * sizeof(btrfs_ioctl_space_info));
  auto* args = reinterpret_cast<btrfs_ioctl_space_args*>(buf.data());
  args->space_slots = n;
  if (::ioctl(fd, BTRFS_IOC_SPACE_INFO, args) != 0) return Status::Io("BTRFS_IOC_SPACE_INFO", errno);
  return std::vector<btrfs_ioctl_space_info>(args->spaces, args->spaces + std::min<uint64_t>(n, args->total_spaces));
}

Result<SpaceUse> MeasureBtrfs(int fd) {
  if (::ioctl(fd, BTRFS_IOC_SYNC, nullptr) != 0 && ::syncfs(fd) != 0) return Status::Io("committing", errno);
  auto infos = SpaceInfos(fd);
  if (!infos.ok()) return infos.status();
  uint64_t data_raw = 0, meta_raw = 0;
  uint32_t data_copies = 1;
  bool mixed = false;
  for (const auto& s : *infos) {
    if (s.flags & BTRFS_SPACE_INFO_GLOBAL_RSV) continue;  // a reservation, not use
    const uint64_t raw = s.used_bytes * BtrfsProfileCopies(s.flags);
    if (s.flags & BTRFS_BLOCK_GROUP_DATA) {
      data_raw += raw;
      data_copies = BtrfsProfileCopies(s.flags);
      // Mixed block groups (mkfs.btrfs --mixed) hold both: counted once, as data.
      mixed |= (s.flags & BTRFS_BLOCK_GROUP_METADATA) != 0;
    } else if (s.flags & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM)) {
      meta_raw += raw;
    }
  }
  SpaceUse u;
  u.btrfs = !mixed;  // mixed: data and metadata cannot be told apart
  u.data_bytes = (mixed ? data_raw + meta_raw : data_raw) / data_copies;
  u.metadata_bytes = mixed ? 0 : meta_raw / data_copies;
  auto info = BtrfsInfoOf(fd);
  if (info.ok()) u.generation = info->generation;
  return u;
}

}  // namespace

uint32_t BtrfsProfileCopies(uint64_t flags) {
  if (flags & BTRFS_BLOCK_GROUP_RAID1C4) return 4;
  if (flags & BTRFS_BLOCK_GROUP_RAID1C3) return 3;
  if (flags & (BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID10)) return 2;
  return 1;
}

Result<uint32_t> BtrfsMetadataCopies(int fd) {
  auto infos = SpaceInfos(fd);
  if (!infos.ok()) return infos.status();
  uint32_t copies = 1;
  for (const auto& s : *infos)
    if ((s.flags & BTRFS_BLOCK_GROUP_METADATA) && !(s.flags & BTRFS_SPACE_INFO_GLOBAL_RSV) && s.total_bytes)
      copies = std::max(copies, BtrfsProfileCopies(s.flags));
  return copies;
}

Result<SpaceUse> MeasureSpace(int fd) {
  struct statfs sfs;
  if (::fstatfs(fd, &sfs) != 0) return Status::Io("statfs", errno);
  if (sfs.f_type == BTRFS_SUPER_MAGIC) return MeasureBtrfs(fd);
  if (::syncfs(fd) != 0) return Status::Io("syncfs", errno);
  if (::fstatfs(fd, &sfs) != 0) return Status::Io("statfs", errno);
  SpaceUse u;
  const uint64_t unit = sfs.f_frsize ? uint64_t(sfs.f_frsize) : uint64_t(sfs.f_bsize);
  if (sfs.f_blocks > sfs.f_bfree) u.data_bytes = uint64_t(sfs.f_blocks - sfs.f_bfree) * unit;
  return u;
}

}  // namespace oans
