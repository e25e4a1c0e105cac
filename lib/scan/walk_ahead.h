// On a spinning disk, the metadata a cold walk will read, read first in disk order:
// - btrfs's trees (lib/btrfs/tree_ahead.h), which the walk then searches;
// - XFS's inode tables (FileSys::ReadInodeTables), before a walk in inode order, so its
//   stat and open calls find them cached instead of each reading its inode cluster where
//   the walk happens to be. A tree spread over the allocation groups otherwise has the
//   walk cross the disk every few directories (docs/benchmarks.md).
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

// Sweeps at most this many bytes of inode tables whatever share of them the roots hold:
// about two seconds of a spinning disk, the most a sweep that does not pay can waste.
inline constexpr uint64_t kInodeSweepAlways = uint64_t(256) << 20;

struct InodeSweepCase {
  uint64_t table_bytes = 0;  // inodes in use times the bytes of one
  uint64_t used_inodes = 0;
  uint64_t tree_files = 0;   // the files the previous index recorded; 0 when not known
  bool root_is_mount = false;  // a root is the filesystem's mount point
  uint64_t available = 0;    // memory available (MemAvailable); 0 when not known
};

// Whether a sweep pays: what it reads must stay cached until the walk stats it (a quarter
// of the memory available), and the roots must hold enough of the filesystem for one pass
// over all its inode tables to cost less than the walk's own reads: a root that is the
// mount point, a quarter of its inodes by the previous index, or a sweep of at most
// kInodeSweepAlways. "" when it pays, else why not.
std::string InodeSweepRefusal(const InodeSweepCase& c);

// For each XFS filesystem among the roots (each once): the sweep, when it pays, into
// stats->inode_tables_*. The previous index's files count as the roots' share when it was
// read whole. Says once per filesystem why it did not sweep, unless it is not XFS.
void SweepInodeTables(Sys& sys, const std::vector<std::string>& roots, const std::atomic<bool>* stop,
                      Observer* observer, ScanStats* stats);

}  // namespace oans
