// Absolute paths as records and plans name them: whether one lies at or below a root,
// judged on its text alone (no component ".", ".." or empty after the root, so that a
// hostile record cannot name a place outside the root that the text seems to be below);
// whether one is clean at all.
#pragma once

#include <string_view>

namespace oans {

inline bool PathWithin(std::string_view path, std::string_view root) {
  if (root.empty() || root[0] != '/') return false;
  if (root.size() > 1 && root.back() == '/') return false;
  if (path == root) return true;
  std::string_view rest;
  if (root == "/") {
    if (path.empty() || path[0] != '/') return false;
    rest = path.substr(1);
  } else {
    if (path.size() <= root.size() + 1 || path.compare(0, root.size(), root) != 0 || path[root.size()] != '/')
      return false;
    rest = path.substr(root.size() + 1);
  }
  for (size_t at = 0;;) {
    const size_t end = rest.find('/', at);
    const std::string_view c = rest.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (c.empty() || c == "." || c == "..") return false;
    if (end == std::string_view::npos) return true;
    at = end + 1;
  }
}

// Whether `path` is one an index or plan may name: absolute, without an empty, "." or
// ".." component and without a NUL byte ("/" itself is one).
inline bool CleanAbsolutePath(std::string_view path) {
  return path.find('\0') == std::string_view::npos && PathWithin(path, "/");
}

}  // namespace oans
