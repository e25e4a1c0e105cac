#include "lib/base/trust.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "lib/base/fd.h"

namespace oans {
namespace {

const char kFix[] =
    "; keep plans and journals in a directory only root (or you) can write, e.g. "
    "install -d -m 0700 /var/lib/oans, and make the file yours with mode 0600 or 0644";

std::string Octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

// The path the kernel has for an open descriptor.
Result<std::string> RealPath(int fd, const std::string& name) {
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::vector<char> buf(PATH_MAX + 1);
  ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) return Status::Io("finding where " + name + " is (reading " + link + ")", errno);
  if (size_t(n) >= buf.size() || buf[0] != '/')
    return Status::Invalid(name + ": cannot check the directories above it (no usable path for it); "
                           "give a file under a shorter path");
  return std::string(buf.data(), size_t(n));
}

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

// Walks from / through the first `count` directories of `parts`, checking / and each of
// them; leaves `dir` open on the last one walked.
Status WalkDirectories(const std::vector<std::string>& parts, size_t count, const std::string& what,
                       const std::string& name, Fd* dir) {
  const uid_t euid = ::geteuid();
  std::string at = "/";
  *dir = Fd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir->get() < 0) return Status::Io("opening /", errno);
  for (size_t i = 0;; ++i) {
    struct stat st;
    if (::fstat(dir->get(), &st) != 0) return Status::Io("checking " + at, errno);
    std::string why = UntrustedReason(st.st_uid, st.st_mode, true, euid);
    if (!why.empty())
      return Status::Invalid("refusing the " + what + " " + name + ": the directory " + at + " above it is " + why +
                             ", so another user could replace it" + kFix);
    if (i == count) return Status::Ok();
    int next = ::openat(dir->get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    at += (at.size() > 1 ? "/" : "") + parts[i];
    if (next < 0) return Status::Io("checking the directory " + at + " above " + name, errno);
    *dir = Fd(next);
  }
}

bool SameInode(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

}  // namespace

std::string UntrustedReason(uid_t owner, mode_t mode, bool directory, uid_t euid) {
  if (owner != 0 && owner != euid) return "owned by uid " + std::to_string(owner) + " (neither root nor you)";
  if ((mode & (S_IWGRP | S_IWOTH)) && !(directory && (mode & S_ISVTX)))
    return std::string("writable by ") + ((mode & S_IWOTH) ? "other users" : "its group") + " (mode " + Octal(mode) +
           (directory ? ", no sticky bit)" : ")");
  return "";
}

Status CheckTrustedFile(int fd, const std::string& what, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Io("checking " + name, errno);
  if (!S_ISREG(st.st_mode)) return Status::Invalid("refusing the " + what + " " + name + ": not a regular file; give the file itself");
  std::string why = UntrustedReason(st.st_uid, st.st_mode, false, ::geteuid());
  if (!why.empty())
    return Status::Invalid("refusing the " + what + " " + name + ": it is " + why +
                           ", so another user could have written it" + kFix);
  OANS_ASSIGN_OR_RETURN(auto real, RealPath(fd, name));
  std::vector<std::string> parts = Components(real);
  if (parts.empty()) return Status::Invalid(name + " is not a file");
  Fd dir;
  OANS_RETURN_IF_ERROR(WalkDirectories(parts, parts.size() - 1, what, name, &dir));
  struct stat there;
  if (::fstatat(dir.get(), parts.back().c_str(), &there, AT_SYMLINK_NOFOLLOW) != 0 || !SameInode(st, there))
    return Status::Invalid("refusing the " + what + " " + name + ": it was moved or replaced while being checked");
  return Status::Ok();
}

Status CheckTrustedDirectory(int dirfd, const std::string& what, const std::string& name) {
  struct stat st;
  if (::fstat(dirfd, &st) != 0) return Status::Io("checking " + name, errno);
  OANS_ASSIGN_OR_RETURN(auto real, RealPath(dirfd, name));
  std::vector<std::string> parts = Components(real);
  Fd dir;
  OANS_RETURN_IF_ERROR(WalkDirectories(parts, parts.size(), what, name, &dir));
  struct stat there;
  if (::fstat(dir.get(), &there) != 0 || !SameInode(st, there))
    return Status::Invalid("refusing the " + what + " " + name + ": its directory was moved while being checked");
  return Status::Ok();
}

}  // namespace oans
