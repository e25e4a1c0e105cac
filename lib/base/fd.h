// Fd: an owning file descriptor. It is moved, never copied, and closed once: when it is
// destroyed, reset or assigned over. One opened through a Sys closes through that Sys,
// so that a fake Sys in a test sees every close of what it opened (PosixSys closes with
// ::close); the Sys must outlive the Fd. One opened with a plain system call closes
// with ::close.
#pragma once

#include <unistd.h>

#include <utility>

#include "lib/base/file_sys.h"
#include "lib/base/status.h"

namespace oans {

class Fd {
 public:
  Fd() = default;
  // Owns `fd`, opened through `sys`.
  Fd(FileSys& sys, int fd) : sys_(&sys), fd_(fd) {}
  // Owns `fd`, opened with a plain system call.
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : sys_(o.sys_), fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      sys_ = o.sys_;
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it; the caller closes it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor now, if there is one.
  void reset() {
    if (fd_ < 0) return;
    const int fd = std::exchange(fd_, -1);
    if (sys_) sys_->Close(fd);
    else ::close(fd);
  }

 private:
  FileSys* sys_ = nullptr;  // null: ::close
  int fd_ = -1;
};

// What an open call of `sys` returned, owned: an Fd, or the call's error.
inline Result<Fd> Own(FileSys& sys, Result<int> fd) {
  if (!fd.ok()) return fd.status();
  return Fd(sys, *fd);
}

}  // namespace oans
