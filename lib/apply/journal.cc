#include "lib/apply/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace oans {
namespace {

std::string HeaderLine(const PlanHeader& h) {
  return "oans-journal 1 plan-created " + std::to_string(h.created_ns) + " rounds " + std::to_string(h.rounds);
}

}  // namespace

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, const PlanHeader& header,
                                               std::string* notice) {
  std::unique_ptr<Journal> j(new Journal());
  j->path_ = path;
  const std::string want = HeaderLine(header);
  bool fresh = true;
  {
    std::ifstream in(path);
    if (in) {
      std::string first;
      std::getline(in, first);
      if (first == want) {
        fresh = false;
        std::string line;
        while (std::getline(in, line)) {
          uint64_t r;
          char tail;
          // Only complete lines count: a line cut by a crash is ignored.
          if (std::sscanf(line.c_str(), "done %lu%c", &r, &tail) == 1 && r < header.rounds) j->done_.insert(r);
        }
      } else {
        std::string stale = path + ".stale";
        if (::rename(path.c_str(), stale.c_str()) != 0) return Status::Io("setting aside " + path, errno);
        *notice = path + " belongs to another plan; moved it to " + stale + " and started a new journal";
      }
    }
  }
  j->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (j->fd_ < 0) return Status::Io("opening journal " + path, errno);
  if (fresh) {
    std::string line = want + "\n";
    if (::ftruncate(j->fd_, 0) != 0 || ::write(j->fd_, line.data(), line.size()) != ssize_t(line.size()) ||
        ::fdatasync(j->fd_) != 0)
      return Status::Io("writing journal " + path, errno);
  } else if (!j->done_.empty()) {
    // A cut last line would glue onto the next record; start on a fresh line.
    if (::write(j->fd_, "\n", 1) != 1) return Status::Io("writing journal " + path, errno);
  }
  return j;
}

Status Journal::MarkDone(uint64_t round) {
  std::string line = "done " + std::to_string(round) + "\n";
  if (::write(fd_, line.data(), line.size()) != ssize_t(line.size())) return Status::Io("writing journal " + path_, errno);
  if (::fdatasync(fd_) != 0) return Status::Io("writing journal " + path_, errno);
  done_.insert(round);
  return Status::Ok();
}

}  // namespace oans
