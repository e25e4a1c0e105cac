// The lock that keeps two `oans run`s on one state directory from overlapping: flock on
// the file "lock" in the state directory, opened relative to its descriptor without
// following a symlink. It holds the pid of its holder, for the message the second run
// prints. The kernel drops the lock when the holder exits, however it exits.
#pragma once

#include <string>

#include "lib/base/status.h"

namespace oans {

class RunLock {
 public:
  // Takes the lock without waiting; when another process holds it, a kBusy error saying
  // which pid and what to do.
  static Result<RunLock> Take(int state_fd, const std::string& state_path);
  RunLock(RunLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace oans
