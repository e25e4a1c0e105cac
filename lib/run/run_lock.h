// The lock that keeps two `oans run`s on one state directory from overlapping: flock on
// the file "lock" in the state directory, opened relative to its descriptor without
// following a symlink. It holds the pid of its holder, for the message the second run
// prints. The kernel drops the lock when the holder exits, however it exits.
#pragma once

#include <string>
#include <utility>

#include "lib/base/fd.h"
#include "lib/base/status.h"

namespace oans {

class RunLock {
 public:
  // Takes the lock without waiting; when another process holds it, a kBusy error saying
  // which pid and what to do.
  static Result<RunLock> Take(int state_fd, const std::string& state_path);

 private:
  explicit RunLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;  // closing it drops the lock
};

}  // namespace oans
