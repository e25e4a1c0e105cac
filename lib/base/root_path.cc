#include "lib/base/root_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace oans {
namespace {

// `root` without trailing slashes and "." components: the entry it names itself, which
// lstat would otherwise look at through a symlink ("link/" and "link/." are its target).
std::string LastEntry(std::string root) {
  for (;;) {
    if (root.size() > 1 && root.back() == '/') {
      root.pop_back();
    } else if (root == ".") {
      return root;
    } else if (root.size() >= 2 && root.compare(root.size() - 2, 2, "/.") == 0) {
      root.resize(root.size() - 2);
      if (root.empty()) root = "/";
    } else {
      return root;
    }
  }
}

// What the symlink at `path` points to: its canonical target, or the link's text when
// the target cannot be resolved.
std::string TargetOf(const std::string& path) {
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    std::string out(real);
    std::free(real);
    return out;
  }
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, size_t(n)) + " (which does not resolve)" : "an unknown target";
}

}  // namespace

Result<std::string> CanonicalRoot(const std::string& root) {
  if (root.empty()) return Status::Invalid("empty root path");
  const std::string entry = LastEntry(root);
  struct stat st;
  if (::lstat(entry.c_str(), &st) != 0) return Status::Io("root " + root, errno);
  if (S_ISLNK(st.st_mode))
    return Status::Invalid(root + " is a symlink to " + TargetOf(entry) + "; give the target itself");
  char* real = ::realpath(root.c_str(), nullptr);
  if (!real) return Status::Io("root " + root, errno);
  std::string out(real);
  std::free(real);
  return out;
}

}  // namespace oans
