#include "lib/run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace oans {

Result<RunLock> RunLock::Take(int state_fd, const std::string& state_path) {
  const std::string path = state_path + "/lock";
  Fd lock(::openat(state_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid()) return Status::Io("opening the lock " + path, errno);
  const int fd = lock.get();
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return Status::Invalid("the lock " + path + " is not a regular file of this user; remove it");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    lock.reset();
    if (e != EWOULDBLOCK) return Status::Io("locking " + path, e);
    std::string holder = n > 0 ? std::string(buf, size_t(n)) : "?";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status::Busy("another oans run (pid " + holder + ") is using the state directory " + state_path +
                           "; this one did nothing. Wait for it to finish (two runs never overlap)");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    return Status::Io("writing the lock " + path, errno);
  return RunLock(std::move(lock));
}

}  // namespace oans
