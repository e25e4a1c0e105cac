// On a spinning disk, the metadata a cold walk will read, read first in disk order:
// - btrfs's trees (lib/btrfs/tree_ahead.h), which the walk then searches;
// - XFS's inode tables (lib/base/inode_sweep.h), before a walk in inode order.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/sys.h"
#include "lib/scan/csum.h"
#include "lib/scan/filesystems.h"
#include "lib/scan/scan.h"

namespace oans {

// What the btrfs read-ahead needs of the scan.
struct TreesAheadOf {
  const ScanOptions& o;
  Filesystems& filesystems;
  Checksums& checksums;
};

// The trees of each subvolume (st_dev) among the roots, once, for as long as --memory
// allows; into stats->tree_ahead_*.
void ReadBtrfsTreesAhead(Sys& sys, const TreesAheadOf& of, const std::vector<std::string>& roots,
                         Observer* observer, ScanStats* stats);

// XFS's inode tables (lib/base/inode_sweep.h) into stats->inode_tables_*; the previous
// index's files count as the roots' share when it was read whole.
void SweepScanInodeTables(Sys& sys, const std::vector<std::string>& roots, const std::atomic<bool>* stop,
                          Observer* observer, ScanStats* stats);

}  // namespace oans
