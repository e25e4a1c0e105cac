#include "lib/scan/excludes.h"

#include <fnmatch.h>

namespace oans {

bool PathExcluded(const std::vector<std::string>& excludes, const std::string& path, const std::string& name) {
  return ExcludedBy(excludes, path, name) >= 0;
}

int ExcludedBy(const std::vector<std::string>& excludes, const std::string& path, const std::string& name) {
  for (size_t i = 0; i < excludes.size(); ++i) {
    const std::string& g = excludes[i];
    if (fnmatch(g.c_str(), g.find('/') != std::string::npos ? path.c_str() : name.c_str(), 0) == 0) return int(i);
  }
  return -1;
}

std::vector<std::string> ExcludesForRoot(const std::vector<std::string>& excludes, const std::string& root) {
  std::string prefix;  // the root as a glob: its own *, ?, [ and \ matched as they are
  for (char c : root) prefix += std::string(c == '*' || c == '?' || c == '[' || c == '\\' ? "\\" : "") + c;
  if (prefix != "/") prefix += '/';
  std::vector<std::string> out;
  for (const auto& g : excludes)
    out.push_back(g.find('/') != std::string::npos && g[0] != '/' && g[0] != '*' ? prefix + g : g);
  return out;
}

Result<std::vector<std::string>> ExcludePreset(const std::string& name) {
  if (name == "nas") return std::vector<std::string>{"@eaDir", "#recycle", "#snapshot", ".snapshots", ".Trash-*"};
  return Status::Invalid("--exclude-preset " + name + ": no such preset; the presets are: nas");
}

}  // namespace oans
