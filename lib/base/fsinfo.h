// Filesystem identity and storage kind. An index or plan records which filesystem (UUID,
// btrfs subvolume) each file lives on, so files of different filesystems are never
// paired and apply can refuse a plan made for another filesystem. The storage kind
// (rotational or not) decides read order and thread counts.
#pragma once

#include <string>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// Identifies the filesystem holding fd: type, UUID, btrfs subvolume, block size and
// the block devices behind it.
Result<FsIdentity> IdentifyFilesystem(int fd);

// The real Sys::DetectStorage. Reads /sys/block/<dev>/queue/rotational for every device. Where sysfs says rotational,
// times a few scattered O_DIRECT reads on the first device: virtual disks claim to be
// rotational but answer in well under a millisecond; a real spinning disk needs several.
StorageInfo DetectStorage(const std::vector<std::string>& devices);

// The real Sys::OpenBlockDevice: `path` opened for O_DIRECT reads only if it is a block
// device, looked at (O_PATH, fstat) before it is opened, so that a FIFO, a character
// device, a regular file or a symlink to one is refused without being opened for reading.
Result<int> OpenBlockDeviceFile(const std::string& path);

const char* StorageKindName(StorageKind k);

// The one rule for whether the filesystem holding fd can share data between files as
// oans-apply would. With FIDEDUPERANGE: on btrfs, and on XFS made with reflink (its
// geometry flags say so; an XFS made without accepts an empty dedupe but refuses every
// real one), never on ext2/3/4, tmpfs, ramfs or FAT (their type from statfs); other
// filesystems pass, their per-file errors tell. With hardlinks, anywhere.
// NoReflinkOn says what keeps fd's filesystem from FIDEDUPERANGE: "" when nothing does,
// else its name ("ext4", "tmpfs", "XFS made without reflink"...).
std::string NoReflinkOn(int fd);
// An error naming `path`, the filesystem and the fix (--link=hard; for XFS, mkfs.xfs -m
// reflink=1) when it cannot share data as `hardlink` asks.
Status CheckCanShareData(int fd, const std::string& path, bool hardlink);
// The same for a path: a directory, or the directory holding anything else.
Status CheckPathCanShareData(const std::string& path, bool hardlink);

// The mount points a mountinfo file (proc(5): /proc/self/mountinfo) lists, its fifth
// field with the kernel's octal escapes (\040 for a space) undone.
Result<std::vector<std::string>> ReadMountPoints(const std::string& path);
// How a mountinfo file mounts device `dev` (major:minor, its third field): how many
// times, and whether one of them mounts a directory of it rather than its root (a bind
// mount of a subtree, a btrfs subvolume).
Result<DeviceMounts> ReadDeviceMounts(const std::string& path, uint64_t dev);

}  // namespace oans
