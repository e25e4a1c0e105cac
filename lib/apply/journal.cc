#include "lib/apply/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "lib/base/fd.h"
#include "lib/base/json.h"
#include "lib/base/trust.h"

namespace oans {
namespace {

// A journal field: the bytes in hex (lib/base/json.h), "-" for none.
std::string Field(const std::string& s) { return s.empty() ? "-" : Hex(s); }

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

// "done N" exactly: canonical decimal digits, no sign, no spaces, no overflow.
bool ParseDoneLine(const std::string& line, uint64_t* round) {
  const std::string prefix = "done ";
  if (line.compare(0, prefix.size(), prefix) != 0 || line.size() == prefix.size()) return false;
  std::string digits = line.substr(prefix.size());
  if (digits.size() > 19 || (digits.size() > 1 && digits[0] == '0')) return false;
  uint64_t r = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    r = r * 10 + uint64_t(c - '0');
  }
  *round = r;
  return true;
}

Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string data;
  char buf[1 << 16];
  for (uint64_t off = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off_t(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io("reading journal " + path, errno);
    if (n == 0) return data;
    data.append(buf, size_t(n));
    off += uint64_t(n);
  }
}

// The journal must be the user's own regular file, writable by no one else.
Status CheckOwnJournal(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Io("checking journal " + path, errno);
  std::string why;
  if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_uid != ::geteuid()) why = "owned by uid " + std::to_string(st.st_uid) + ", not by you";
  else if (st.st_mode & (S_IWGRP | S_IWOTH)) why = "writable by other users";
  if (why.empty()) return Status::Ok();
  return Status::Invalid("refusing the journal " + path + ": it is " + why +
                         "; remove it (the next run starts a new one) or give --journal FILE in a directory of your own");
}

void SplitPath(const std::string& path, std::string* dir, std::string* base) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *base = path;
  } else {
    *dir = slash == 0 ? "/" : path.substr(0, slash);
    *base = path.substr(slash + 1);
  }
}

}  // namespace

std::set<uint64_t> ParseJournalRounds(const std::string& body, uint64_t rounds) {
  std::set<uint64_t> done;
  size_t pos = 0;
  for (;;) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string::npos) break;  // a line without its newline was cut: ignored
    uint64_t r;
    if (ParseDoneLine(body.substr(pos, nl - pos), &r) && r < rounds) done.insert(r);
    pos = nl + 1;
  }
  return done;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

bool Journal::Done(uint64_t round) const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_.count(round) != 0;
}

size_t Journal::done_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_.size();
}

// Reads an existing journal; `matches` tells whether it is this plan's.
Status Journal::Load(int fd, const std::string& want, uint64_t rounds, bool* matches) {
  OANS_ASSIGN_OR_RETURN(auto data, ReadAll(fd, path_));
  // Hidden hardlink names a killed run left, whichever plan the journal was for.
  for (size_t pos = 0, nl; (nl = data.find('\n', pos)) != std::string::npos; pos = nl + 1)
    ParseLinkLine(data.substr(pos, nl - pos));
  const std::string head = want + "\n";
  *matches = data.compare(0, head.size(), head) == 0;
  if (!*matches) return Status::Ok();
  done_ = ParseJournalRounds(data.substr(head.size()), rounds);
  // A cut last line is dropped, so that it can neither glue onto the next record nor
  // be completed by it.
  if (data.back() != '\n' && ::ftruncate(fd, off_t(data.rfind('\n') + 1)) != 0)
    return Status::Io("writing journal " + path_, errno);
  return Status::Ok();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, const PlanHeader& header,
                                               std::string* notice) {
  std::unique_ptr<Journal> j(new Journal());
  j->path_ = path;
  std::string dir, base;
  SplitPath(path, &dir, &base);
  if (base.empty() || base == "." || base == "..") return Status::Invalid("journal " + path + ": give a file name");
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid()) return Status::Io("opening the journal's directory " + dir, errno);
  OANS_RETURN_IF_ERROR(CheckTrustedDirectory(d.get(), "journal", path));
  const std::string want = HeaderLine(header);
  j->fd_ = ::openat(d.get(), base.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (j->fd_ < 0 && errno == ELOOP)
    return Status::Invalid("refusing the journal " + path + ": it is a symbolic link (never followed); remove it");
  if (j->fd_ < 0 && errno != ENOENT) return Status::Io("opening journal " + path, errno);
  if (j->fd_ >= 0) {
    OANS_RETURN_IF_ERROR(CheckOwnJournal(j->fd_, path));
    bool matches = false;
    OANS_RETURN_IF_ERROR(j->Load(j->fd_, want, header.rounds, &matches));
    if (matches) return j;
    // Set aside exactly the file that was read: rename never follows a symlink, and the
    // name must still hold the same inode afterwards.
    const std::string stale = base + ".stale";
    struct stat was, now;
    if (::fstat(j->fd_, &was) != 0 || ::renameat(d.get(), base.c_str(), d.get(), stale.c_str()) != 0)
      return Status::Io("setting aside " + path, errno);
    if (::fstatat(d.get(), stale.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != was.st_ino ||
        now.st_dev != was.st_dev)
      return Status::Invalid("journal " + path + " was replaced while being set aside; run again");
    *notice = path + " belongs to another plan; moved it to " + path + ".stale and started a new journal";
    ::close(j->fd_);
  }
  j->fd_ = ::openat(d.get(), base.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (j->fd_ < 0) return Status::Io("creating journal " + path, errno);
  std::string line = want + "\n";
  if (::write(j->fd_, line.data(), line.size()) != ssize_t(line.size()) || ::fdatasync(j->fd_) != 0)
    return Status::Io("writing journal " + path, errno);
  return j;
}

Status Journal::MarkDone(uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
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
    if (!(in >> std::ws).eof()) return false;  // a record glued to another
    if (!Unhex(hd, &li.dir) || !Unhex(ht, &li.tmp)) return false;
    pending_[IntentKey(li)] = li;
    return true;
  }
  if (kind == "link-end") {
    std::string hd, ht;
    if (!(in >> hd >> ht) || !(in >> std::ws).eof() || !Unhex(hd, &dir) || !Unhex(ht, &tmp)) return false;
    pending_.erase(dir + "/" + tmp);
    return true;
  }
  return false;
}

Status Journal::Append(const std::string& line) {
  std::lock_guard<std::mutex> lk(mu_);
  if (cut_) return Status::Io("journal " + path_ + " holds a record cut short by a failed write; run again", EIO);
  const std::string l = line + "\n";
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (::write(fd_, l.data(), l.size()) != ssize_t(l.size())) {
    const int e = errno ? errno : ENOSPC;
    // A cut record would run into the next one: taken back.
    if (end < 0 || ::ftruncate(fd_, end) != 0) cut_ = true;
    return Status::Io("writing journal " + path_, e);
  }
  if (::fdatasync(fd_) != 0) return Status::Io("writing journal " + path_, errno);
  return Status::Ok();
}

namespace {

std::string BeginLine(const LinkIntent& in) {
  return "link-begin " + Field(in.dir) + " " + Field(in.tmp) + " " + std::to_string(in.src_ino) + " " +
         std::to_string(in.dst_ino) + " " + std::to_string(in.dst_size) + " " + std::to_string(in.dst_mtime_ns) +
         " " + std::to_string(in.dst_ctime_ns);
}

std::string EndLine(const LinkIntent& in) { return "link-end " + Field(in.dir) + " " + Field(in.tmp); }

}  // namespace

Status Journal::Begin(const LinkIntent& in) { return BeginAll({in}); }

Status Journal::End(const LinkIntent& in) { return EndAll({in}); }

Status Journal::BeginAll(const std::vector<LinkIntent>& intents) {
  OANS_RETURN_IF_ERROR(AppendAll(intents, BeginLine));
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& in : intents) pending_[IntentKey(in)] = in;
  return Status::Ok();
}

Status Journal::EndAll(const std::vector<LinkIntent>& intents) {
  OANS_RETURN_IF_ERROR(AppendAll(intents, EndLine));
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& in : intents) pending_.erase(IntentKey(in));
  return Status::Ok();
}

Status Journal::AppendAll(const std::vector<LinkIntent>& intents, std::string (*line)(const LinkIntent&)) {
  if (intents.empty()) return Status::Ok();
  std::string lines;
  for (const auto& in : intents) lines += line(in) + "\n";
  lines.pop_back();
  return Append(lines);
}

std::vector<LinkIntent> Journal::Pending() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<LinkIntent> out;
  for (const auto& [k, v] : pending_) out.push_back(v);
  return out;
}

}  // namespace oans
