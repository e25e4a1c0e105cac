// Paths below directories that were renamed, moved or removed since a previous scan:
// old directory path -> its new path, or removed. A path is decided by its longest
// directory prefix in the map, so a directory moved out of a removed one keeps its files.
// Built on one thread, then read-only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace oans {

inline std::string PathJoin(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}
inline std::string_view PathDirname(std::string_view p) {
  const size_t at = p.rfind('/');
  return at == 0 || at == std::string_view::npos ? "/" : p.substr(0, at);
}
inline std::string_view PathBasename(std::string_view p) { return p.substr(p.rfind('/') + 1); }

class PathMap {
 public:
  void Rename(const std::string& from, const std::string& to) { map_[from] = to; }
  void Remove(const std::string& dir) { map_[dir] = std::nullopt; }
  bool empty() const { return map_.empty(); }
  // The path now: unchanged, rewritten below a renamed directory, or nullopt when it
  // lies below a removed one.
  std::optional<std::string> Map(const std::string& path) const {
    if (map_.empty()) return path;
    for (size_t end = path.size(); end != std::string::npos && end > 0; end = path.rfind('/', end - 1)) {
      auto it = map_.find(path.substr(0, end));
      if (it == map_.end()) continue;
      if (!it->second) return std::nullopt;
      return *it->second + path.substr(end);
    }
    return path;
  }
  // Whether Map(path) is other than path: it lies below a renamed or removed directory.
  bool Moves(std::string_view path) const {
    if (map_.empty()) return false;
    for (size_t end = path.size(); end != std::string_view::npos && end > 0; end = path.rfind('/', end - 1))
      if (map_.find(path.substr(0, end)) != map_.end()) return true;
    return false;
  }

 private:
  std::map<std::string, std::optional<std::string>, std::less<>> map_;
};

}  // namespace oans
