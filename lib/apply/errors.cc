#include "lib/apply/errors.h"

#include <cerrno>
#include <cstring>

namespace oans {
namespace {

const char* ErrnoName(int e) {
  switch (e) {
    case EPERM: return "EPERM (not permitted: immutable, append-only or not owner)";
    case EACCES: return "EACCES (permission denied)";
    case ETXTBSY: return "ETXTBSY (active swapfile)";
    case EXDEV: return "EXDEV (another filesystem)";
    case EINVAL: return "EINVAL (unaligned range, nodatacow mismatch or unsupported)";
    case EAGAIN: return "EAGAIN (busy: btrfs send running)";
    case EOPNOTSUPP: return "EOPNOTSUPP (filesystem cannot dedupe)";
    case ENOENT: return "ENOENT (vanished since scan)";
    case ELOOP: return "ELOOP (a symlink in the path)";
    case EISDIR: return "EISDIR (now a directory)";
    case ENOSPC: return "ENOSPC (no space for metadata)";
    case EIO: return "EIO (I/O error)";
    default: return nullptr;
  }
}

}  // namespace

std::string ReasonFor(int errnum) {
  const char* n = ErrnoName(errnum);
  return n ? n : ("errno " + std::to_string(errnum) + " (" + std::strerror(errnum) + ")");
}

bool Transient(int errnum) {
  switch (errnum) {
    case EAGAIN: case EBUSY: case EINTR: case ENOSPC: case ENOMEM: case EMFILE: case ENFILE: case EIO:
    case EDQUOT: case ETIMEDOUT:
      return true;
    default:
      return false;
  }
}

}  // namespace oans
