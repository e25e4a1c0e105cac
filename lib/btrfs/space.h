// The space a filesystem has in use, as its allocator counts it: what oans-apply
// measures before and after a plan. On btrfs (BTRFS_IOC_SPACE_INFO) data apart from
// metadata, each block group profile's copies counted (DUP and RAID1 hold two); on
// other filesystems (XFS, ext4) statfs's used blocks, data and metadata together.
// Figures are in df's units: raw bytes divided by the data profile's copies, so that
// the data and metadata figures add up to what df's "Used" shows.
#pragma once

#include <cstdint>

#include "lib/base/status.h"

namespace oans {

struct SpaceUse {
  bool btrfs = false;           // data and metadata told apart
  uint64_t data_bytes = 0;      // data in use (elsewhere: everything in use)
  uint64_t metadata_bytes = 0;  // metadata and system in use, with their copies
  uint64_t generation = 0;      // btrfs: the filesystem's generation after the commit
};

// Copies a btrfs block group profile keeps (BTRFS_BLOCK_GROUP_* flags): 2 for DUP,
// RAID1 and RAID10, 3 and 4 for RAID1C3 and RAID1C4, else 1 (RAID5/6 counted as 1).
uint32_t BtrfsProfileCopies(uint64_t flags);

// The copies btrfs keeps of its metadata (the profile of its metadata block groups).
Result<uint32_t> BtrfsMetadataCopies(int fd);

// Commits the filesystem of `fd` first (btrfs: BTRFS_IOC_SYNC, which also runs the
// delayed reference updates that free extents; elsewhere syncfs), then measures it.
Result<SpaceUse> MeasureSpace(int fd);

}  // namespace oans
