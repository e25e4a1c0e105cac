// XFS's own ioctls: its geometry, bulkstat, which reads the inode tables in disk order,
// and a directory's block map, by which its blocks are read in disk order.
// Everything oans knows of XFS's interfaces is here; lib/base/sys.cc calls it.
#pragma once

#include <cstdint>
#include <functional>

#include "lib/base/file_sys.h"
#include "lib/base/status.h"

namespace oans {

// The bytes one inode takes on disk (XFS_IOC_FSGEOMETRY). Unsupported off XFS.
Result<uint32_t> XfsInodeSize(int fd);

// Every inode in use, in inode number order, which on XFS is disk order: an allocation
// group's inode chunks one after the other, each read ahead by the kernel. What is read
// stays in XFS's buffer cache, so later stat and open calls need no read of their own.
// The records bulkstat returns are counted and dropped. Needs CAP_SYS_ADMIN (EPERM).
Status XfsReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out);

// Reads the data blocks of the directory open as `fd` in disk order, ahead of its
// listing: XFS often lays a growing directory's blocks out downwards, so a listing in
// logical order steps back on the disk for each block. Each data extent out of order is
// listed from its own position (XFS's directory cookies are byte offsets / 8) and the
// entries dropped; the blocks stay in XFS's buffer cache. The directory is left at its
// start. Its leaf block (the index its names are looked up by, which a listing does not
// read) is read then too, by looking up kLookupAhead: the lookups of its subdirectories'
// names would otherwise read it later, each when a walk comes to that subdirectory,
// wherever the disk is then. Returns the extents so read (0 when they were in order already, more than
// 1,024 or 64 MiB, or its map could not be had). Unsupported off XFS; an error only when the directory could not be
// set back at its start (its listing would miss entries).
Result<uint32_t> XfsReadDirectoryInDiskOrder(int fd);

// The name XfsReadDirectoryInDiskOrder looks up (not followed, no automount; what it
// finds is not used, so whether it exists does not matter).
inline constexpr const char* kLookupAhead = ".oans-walk-lookup-ahead";

}  // namespace oans
