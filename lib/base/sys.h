// Sys: every system call oans makes on user data, behind one interface so that tests can
// inject faults (EIO, ENOSPC, DIFFERS, a file changed between phases) without a disk.
// It joins three interfaces by concern: FileSys (lib/base/file_sys.h), BtrfsSys
// (lib/base/btrfs_sys.h) and LinkSys (lib/base/link_sys.h). Code that needs one concern
// may take that one. PosixSys is the real one. Methods return errors as Status and never
// throw; what a Sys cannot do is Status::Unsupported. Implementations must be safe to
// call from several threads at once.
#pragma once

#include <cstddef>

#include "lib/base/btrfs_sys.h"
#include "lib/base/file_sys.h"
#include "lib/base/link_sys.h"

namespace oans {

class Sys : public FileSys, public BtrfsSys, public LinkSys {
 public:
  ~Sys() override = default;
};

// The real system calls.
Sys& DefaultSys();

// Maximum destinations one FIDEDUPERANGE call accepts (the request must fit in a page).
inline constexpr size_t kMaxDedupeDests = 127;

}  // namespace oans
