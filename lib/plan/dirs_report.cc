#include "lib/plan/dirs_report.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "lib/base/json.h"
#include "lib/base/units.h"

namespace oans {
namespace {

std::string Escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<DirUsage> DirsReport(const std::vector<GroupReport>& groups, size_t top) {
  std::unordered_map<std::string, DirUsage> dirs;
  for (const auto& g : groups) {
    for (size_t i = 0; i < g.dests.size(); ++i) {
      if (i < g.dest_shared.size() && g.dest_shared[i]) continue;
      const std::string& path = g.dests[i];
      // Every directory above the file: the prefixes ending before each '/'.
      for (size_t cut = path.find_last_of('/'); cut != std::string::npos;
           cut = cut == 0 ? std::string::npos : path.find_last_of('/', cut - 1)) {
        std::string dir = cut == 0 ? "/" : path.substr(0, cut);
        DirUsage& u = dirs[dir];
        u.dir = dir;
        u.reclaimable_bytes += g.size;
        u.duplicate_files += 1;
        if (cut == 0) break;
      }
    }
  }
  // Like du from the directory that holds them all: not the directories above it.
  std::string common;
  uint64_t total_files = 0;
  for (auto& [k, v] : dirs) total_files = std::max(total_files, v.duplicate_files);
  for (auto& [k, v] : dirs)
    if (v.duplicate_files == total_files && k.size() > common.size()) common = k;
  std::vector<DirUsage> out;
  out.reserve(dirs.size());
  for (auto& [k, v] : dirs)  // every directory holding them all is `common` or above it
    if (v.duplicate_files != total_files || k == common) out.push_back(std::move(v));
  std::sort(out.begin(), out.end(), [](const DirUsage& a, const DirUsage& b) {
    if (a.reclaimable_bytes != b.reclaimable_bytes) return a.reclaimable_bytes > b.reclaimable_bytes;
    return a.dir < b.dir;
  });
  if (top && out.size() > top) out.resize(top);
  return out;
}

std::string DirsText(const std::vector<DirUsage>& dirs) {
  std::string out;
  for (const auto& d : dirs) {
    char counts[64];
    std::snprintf(counts, sizeof counts, "%10s  %8llu files  ", FormatSize(d.reclaimable_bytes).c_str(),
                  (unsigned long long)d.duplicate_files);
    out += counts + Escaped(d.dir) + "\n";
  }
  return out;
}

std::string DirsJson(const std::vector<DirUsage>& dirs) {
  std::string out;
  for (const auto& d : dirs) {
    Json line = Json::object();
    AddPath(line, "path", d.dir);
    line["reclaimable_bytes"] = d.reclaimable_bytes;
    line["duplicate_files"] = d.duplicate_files;
    out += JsonLine(line) + "\n";
  }
  return out;
}

}  // namespace oans
