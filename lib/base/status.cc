#include "lib/base/status.h"

#include <cstring>

namespace oans {

Status Status::Io(std::string what, int errnum) {
  std::string msg = std::move(what);
  msg += ": ";
  msg += std::strerror(errnum);
  return Status(Code::kIoError, std::move(msg), errnum);
}

Status Status::Prepend(const std::string& context) const {
  Status s = *this;
  if (!s.ok()) s.msg_ = context + ": " + s.msg_;
  return s;
}

}  // namespace oans
