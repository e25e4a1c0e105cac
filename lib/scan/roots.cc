#include "lib/scan/roots.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "lib/base/paths.h"
#include "lib/base/root_path.h"
#include "lib/scan/walk.h"

namespace oans {
namespace {

// Whether the walk of `outer` reaches `inner`, a different canonical path: `inner` lies
// below the directory `outer`, and no directory from `outer` down to it (itself
// included) is on another mount than `outer` or excluded, as the walk judges them
// (walk.cc: a directory on another mount is not entered; mount ids unknown, it is).
bool Covers(Sys& sys, const std::string& outer, const std::string& inner, const std::vector<std::string>& excludes) {
  if (!PathWithin(inner, outer) || inner == outer) return false;
  auto top = sys.StatAt(AT_FDCWD, outer);
  if (!top.ok() || !S_ISDIR(top->mode)) return false;
  for (size_t at = outer == "/" ? 1 : outer.size() + 1; at <= inner.size();) {
    size_t end = inner.find('/', at);
    if (end == std::string::npos) end = inner.size();
    const std::string path = inner.substr(0, end), name = inner.substr(at, end - at);
    if (!excludes.empty() && PathExcluded(ExcludesForRoot(excludes, outer), path, name)) return false;
    auto st = sys.StatAt(AT_FDCWD, path);
    if (!st.ok()) return false;
    if (S_ISDIR(st->mode) && top->mnt_id && st->mnt_id && st->mnt_id != top->mnt_id) return false;
    at = end + 1;
  }
  return true;
}

}  // namespace

Result<ScanRoots> CanonicalScanRoots(Sys& sys, const std::vector<std::string>& given,
                                     const std::vector<std::string>& excludes) {
  if (given.empty()) return Status::Invalid("no root to scan");
  std::vector<std::string> canonical, as_given;
  ScanRoots out;
  for (const auto& g : given) {
    OANS_ASSIGN_OR_RETURN(auto root, CanonicalRoot(g));
    size_t first = 0;
    while (first < canonical.size() && canonical[first] != root) ++first;
    if (first == canonical.size()) {
      canonical.push_back(root);
      as_given.push_back(g);
    } else if (as_given[first] == g) {
      out.notices.push_back(root + " is given more than once; scanning it once");
    } else {
      out.notices.push_back(g + " and " + as_given[first] + " are the same root, " + root + "; scanning it once");
    }
  }
  for (const auto& root : canonical) {
    std::string by;
    for (const auto& other : canonical)
      if (by.empty() && Covers(sys, other, root, excludes)) by = other;
    if (by.empty()) {
      out.roots.push_back(root);
    } else {
      out.notices.push_back(root + " lies below " + by + ", whose walk covers it; scanning it once, as part of " + by);
    }
  }
  return out;
}

}  // namespace oans
