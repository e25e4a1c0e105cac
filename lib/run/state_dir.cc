#include "lib/run/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "lib/base/fd.h"
#include "lib/base/fsinfo.h"
#include "lib/base/root_path.h"
#include "lib/base/sys.h"

namespace oans {
namespace {

std::string Parent(const std::string& path) {
  size_t cut = path.find_last_of('/');
  return cut == 0 ? "/" : path.substr(0, cut);
}

std::string Base(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Owned by us and writable by no one else.
Status CheckOwnedPrivate(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Io("stat " + path, errno);
  if (!S_ISDIR(st.st_mode)) return Status::Invalid(path + " is not a directory");
  if (st.st_uid != ::geteuid())
    return Status::Invalid("state directory " + path + " is owned by uid " + std::to_string(st.st_uid) +
                           ", not by this user: another user could change what oans run trusts; remove it or "
                           "choose another --state-dir");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return Status::Invalid("state directory " + path + " is writable by other users (mode " +
                           [&] {
                             char b[8];
                             std::snprintf(b, sizeof b, "%04o", unsigned(st.st_mode & 07777));
                             return std::string(b);
                           }() +
                           "): another user could change what oans run trusts; chmod go-w it or choose another "
                           "--state-dir");
  return Status::Ok();
}

// A parent owned by root (/var/lib) or by us, that no one else can write, or only with the
// sticky bit (/tmp): no one else can rename the state directory out of it.
Status CheckParent(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Io("stat " + path, errno);
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return Status::Invalid("the state directory's parent " + path + " belongs to uid " + std::to_string(st.st_uid) +
                           ", who could put another directory in its place; choose another --state-dir");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return Status::Invalid("the state directory's parent " + path +
                           " is writable by other users without the sticky bit: they could put another directory "
                           "in its place; choose another --state-dir");
  return Status::Ok();
}

}  // namespace

std::string StateDirName(const std::vector<std::string>& roots) {
  std::vector<std::string> sorted = roots;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string joined, readable;
  for (const auto& r : sorted) {
    joined += r;
    joined.push_back('\0');
    if (!readable.empty()) readable += '+';
    std::string part = r;
    while (!part.empty() && part.front() == '/') part.erase(0, 1);
    readable += part.empty() ? "root" : part;
  }
  for (char& c : readable)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+') c = '_';
  if (readable.size() > 48) readable.resize(48);
  if (readable.empty() || readable[0] == '.') readable.insert(0, "r");
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", (unsigned long long)XXH3_64bits(joined.data(), joined.size()));
  return readable + "-" + hash;
}

Result<std::vector<std::string>> CanonicalRoots(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& r : roots) {
    OANS_ASSIGN_OR_RETURN(auto real, CanonicalRoot(r));
    out.push_back(std::move(real));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<int> OpenStateDir(const std::string& path, bool create, bool* created) {
  if (path.empty() || path[0] != '/' || path == "/")
    return Status::Invalid("state directory " + path + ": give an absolute path below /");
  std::string parent = Parent(path), name = Base(path);
  if (name.empty() || name == "." || name == "..") return Status::Invalid("state directory " + path + ": bad name");
  if (create && ::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::Io("creating " + parent, errno);
  auto pfd = Own(DefaultSys(), DefaultSys().OpenDirNoFollow(parent));
  if (!pfd.ok()) return pfd.status().Prepend("state directory's parent: ");
  const int pdir = pfd->get();
  OANS_RETURN_IF_ERROR(CheckParent(pdir, parent));
  bool made = create && ::mkdirat(pdir, name.c_str(), 0700) == 0;
  if (create && !made && errno != EEXIST) return Status::Io("creating state directory " + path, errno);
  if (created) *created = made;
  Fd fd(::openat(pdir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  int e = errno;
  if (!fd.valid()) {
    if (e == ELOOP || e == ENOTDIR)
      return Status::Invalid("state directory " + path + " is a symlink or not a directory; oans run never follows one");
    return Status::Io("opening state directory " + path, e);
  }
  Status st = CheckOwnedPrivate(fd.get(), path);
  struct statfs sfs;
  if (st.ok() && ::fstatfs(fd.get(), &sfs) != 0) st = Status::Io("statfs " + path, errno);
  if (st.ok() && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC))
    st = Status::Invalid("state directory " + path +
                         " is on tmpfs: its generations would vanish at the next reboot and every run would read "
                         "everything again; choose a directory on a disk with --state-dir");
  if (!st.ok()) {
    fd.reset();
    if (made) ::unlinkat(pdir, name.c_str(), AT_REMOVEDIR);
    return st;
  }
  return fd.release();
}

Status CheckNotOnRoots(int dirfd, const std::string& path, const std::vector<std::string>& roots) {
  struct stat sst;
  if (::fstat(dirfd, &sst) != 0) return Status::Io("stat " + path, errno);
  auto sid = IdentifyFilesystem(dirfd);
  for (const auto& root : roots) {
    auto rfd = Own(DefaultSys(), DefaultSys().OpenNoFollow(root));
    if (!rfd.ok()) return rfd.status().Prepend("root: ");
    struct stat rst;
    bool same = ::fstat(rfd->get(), &rst) == 0 && rst.st_dev == sst.st_dev;
    auto rid = IdentifyFilesystem(rfd->get());
    rfd->reset();
    if (!same && sid.ok() && rid.ok() && !sid->uuid.empty()) same = sid->uuid == rid->uuid;
    if (same)
      return Status::Invalid("state directory " + path + " is on the filesystem of " + root +
                             ", which is being deduped: its indexes and plans would be scanned and deduped under the "
                             "run; choose a directory on another filesystem with --state-dir");
  }
  return Status::Ok();
}

std::vector<std::string> StoredStateDirs(const std::string& base) {
  std::vector<std::string> out;
  DIR* d = ::opendir(base.c_str());
  if (!d) return out;
  int bfd = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    if (::fstatat(bfd, (n + "/run.conf").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      out.push_back(base + "/" + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace oans
