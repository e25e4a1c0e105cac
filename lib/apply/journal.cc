#include "lib/apply/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace oans {
namespace {

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out.empty() ? "-" : out;
}

bool Unhex(const std::string& h, std::string* out) {
  out->clear();
  if (h == "-") return true;
  if (h.size() % 2) return false;
  auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < h.size(); i += 2) {
    int a = v(h[i]), b = v(h[i + 1]);
    if (a < 0 || b < 0) return false;
    *out += char(a * 16 + b);
  }
  return true;
}

std::string IntentKey(const LinkIntent& in) { return in.dir + "/" + in.tmp; }

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
  {
    // Hidden hardlink names a killed run left, whichever plan the journal was for.
    std::ifstream in(path);
    std::string line;
    while (in && std::getline(in, line))
      if (!in.eof()) j->ParseLinkLine(line);
  }
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

bool Journal::ParseLinkLine(const std::string& line) {
  std::istringstream in(line);
  std::string kind, dir, tmp;
  in >> kind;
  if (kind == "link-begin") {
    LinkIntent li;
    std::string hd, ht;
    if (!(in >> hd >> ht >> li.src_ino >> li.dst_ino >> li.dst_size >> li.dst_mtime_ns >> li.dst_ctime_ns)) return false;
    if (!Unhex(hd, &li.dir) || !Unhex(ht, &li.tmp)) return false;
    pending_[IntentKey(li)] = li;
    return true;
  }
  if (kind == "link-end") {
    std::string hd, ht;
    if (!(in >> hd >> ht) || !Unhex(hd, &dir) || !Unhex(ht, &tmp)) return false;
    pending_.erase(dir + "/" + tmp);
    return true;
  }
  return false;
}

Status Journal::Append(const std::string& line) {
  std::lock_guard<std::mutex> lk(mu_);
  const std::string l = line + "\n";
  if (::write(fd_, l.data(), l.size()) != ssize_t(l.size())) return Status::Io("writing journal " + path_, errno);
  if (::fdatasync(fd_) != 0) return Status::Io("writing journal " + path_, errno);
  return Status::Ok();
}

Status Journal::Begin(const LinkIntent& in) {
  OANS_RETURN_IF_ERROR(Append("link-begin " + Hex(in.dir) + " " + Hex(in.tmp) + " " + std::to_string(in.src_ino) +
                              " " + std::to_string(in.dst_ino) + " " + std::to_string(in.dst_size) + " " +
                              std::to_string(in.dst_mtime_ns) + " " + std::to_string(in.dst_ctime_ns)));
  std::lock_guard<std::mutex> lk(mu_);
  pending_[IntentKey(in)] = in;
  return Status::Ok();
}

Status Journal::End(const LinkIntent& in) {
  OANS_RETURN_IF_ERROR(Append("link-end " + Hex(in.dir) + " " + Hex(in.tmp)));
  std::lock_guard<std::mutex> lk(mu_);
  pending_.erase(IntentKey(in));
  return Status::Ok();
}

std::vector<LinkIntent> Journal::Pending() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<LinkIntent> out;
  for (const auto& [k, v] : pending_) out.push_back(v);
  return out;
}

}  // namespace oans
