// btrfs's checksum tree (tree 7), searched through Sys::TreeSearch: a filesystem's
// checksum facts, and the checksum of each 4 KiB sector of a range of logical addresses
// (on btrfs, FIEMAP's `physical`). Each thread keeps the checksums of the last range it
// searched, that range and 4 MiB past it: files written one after another lie one after
// another, so most files cost no search of their own. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

// BTRFS_CSUM_TYPE_* (linux/btrfs_tree.h), as BtrfsInfo::csum_type has them.
inline constexpr uint16_t kBtrfsCsumCrc32c = 0, kBtrfsCsumXxhash = 1, kBtrfsCsumSha256 = 2, kBtrfsCsumBlake2 = 3;

// What the first look at a filesystem learns.
struct CsumTreeFacts {
  bool btrfs = false;     // BTRFS_IOC_FS_INFO told the checksum type
  bool layout = false;    // a known type, 4 KiB sectors, checksums of at least 4 bytes
  bool permitted = false; // the checksum tree may be searched (CAP_SYS_ADMIN)
  uint16_t csum_type = 0;
  uint16_t csum_size = 4;
  uint64_t span = 0;       // most bytes of data one checksum item covers
  uint64_t committed = 0;  // the generation after the syncfs; 0 when it failed
};

// The facts of fd's filesystem. With a known layout, first a syncfs: checksums are
// inserted once written data reaches disk, and unwritten data would be delalloc.
CsumTreeFacts ProbeCsumTree(Sys& sys, int fd);

// The checksums of a run of sectors: sums[i] is sector i's where have[i].
struct CsumRun {
  std::vector<uint32_t> sums;
  std::vector<uint8_t> have;
};

// The checksum tree of one filesystem, its facts usable.
class CsumTree {
 public:
  CsumTree(BtrfsSys& sys, const CsumTreeFacts& facts);
  // Sectors [logical, logical + sectors * 4096), searched through fd.
  Status Lookup(int fd, uint64_t logical, uint64_t sectors, CsumRun* out);
  uint64_t searches() const { return searches_.load(std::memory_order_relaxed); }

 private:
  BtrfsSys& sys_;
  const CsumTreeFacts facts_;
  const uint64_t instance_;
  std::atomic<uint64_t> searches_{0};
};

// The low 32 bits of a checksum as btrfs stores it (little-endian, at least 4 bytes).
uint32_t StoredSum(std::string_view csum);

}  // namespace oans
