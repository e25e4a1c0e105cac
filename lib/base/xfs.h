// XFS's own ioctls: its geometry and bulkstat, which reads the inode tables in disk order.
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

}  // namespace oans
