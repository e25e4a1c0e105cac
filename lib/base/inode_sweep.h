// XFS's inode tables read once, in disk order (FileSys::ReadInodeTables), before a pass
// that stats or opens many files on a spinning disk: the scan's walk in inode order
// (lib/scan/walk_ahead.h) and apply's checks of its rounds' files (lib/apply/apply.cc).
// The pass then finds them in the kernel's cache instead of reading each inode cluster
// where it happens to be: a tree spread over the allocation groups otherwise has it
// cross the disk every few directories (docs/benchmarks.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// Sweeps at most this many bytes of inode tables whatever share of them the roots hold:
// about two seconds of a spinning disk, the most a sweep that does not pay can waste.
inline constexpr uint64_t kInodeSweepAlways = uint64_t(256) << 20;

struct InodeSweepCase {
  uint64_t table_bytes = 0;    // inodes in use times the bytes of one
  uint64_t used_inodes = 0;
  uint64_t tree_files = 0;     // the files the pass will meet, at least; 0 when not known
  bool root_is_mount = false;  // a root is the filesystem's mount point
  uint64_t available = 0;      // memory available (MemAvailable); 0 when not known
  uint64_t swept_before = 0;   // bytes of other filesystems' tables swept by the same pass
};

// Whether a sweep pays: what it reads must stay cached until the pass needs it (with what
// was swept before, a quarter of the memory available), and the roots must hold enough of the filesystem for one
// pass over all its inode tables to cost less than the reads it saves: a root that is the
// mount point, a quarter of its inodes, or a sweep of at most kInodeSweepAlways.
// "" when it pays, else why not.
std::string InodeSweepRefusal(const InodeSweepCase& c);

struct InodeSweep {
  uint64_t inodes = 0;  // inodes in use met
  uint64_t bytes = 0;   // of inode tables (inodes times the bytes of one)
};

// Each XFS filesystem among `roots` (each once) swept when it pays, with `tree_files` as
// the roots' share (of all the roots: a filesystem they barely touch may still be swept
// as if they held it). `notice` is told once per filesystem why it was not swept, unless it
// is not XFS; `stop` is asked between calls.
InodeSweep SweepInodeTables(Sys& sys, const std::vector<std::string>& roots, uint64_t tree_files,
                            const std::function<bool()>& stop, const std::function<void(const std::string&)>& notice);

}  // namespace oans
