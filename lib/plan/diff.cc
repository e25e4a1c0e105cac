#include "lib/plan/diff.h"

#include <unordered_map>

namespace oans {
namespace {

struct Old {
  std::string path;
  FileIdentity id;
  bool seen = false;
};

}  // namespace

const char* DiffKindName(DiffKind k) {
  switch (k) {
    case DiffKind::kAdded: return "added";
    case DiffKind::kRemoved: return "removed";
    case DiffKind::kChanged: return "changed";
    case DiffKind::kRenamed: return "renamed";
  }
  return "?";
}

Status DiffIndexes(const std::string& old_path, const std::string& new_path,
                   const std::function<void(const DiffEntry&)>& on_entry, DiffStats* stats) {
  std::unordered_map<std::string, std::unordered_map<uint64_t, Old>> old;
  IndexReadOptions ro;
  ro.allow_truncated = true;
  auto r = ReadIndex(
      old_path, ro, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
        for (auto& e : batch)
          if (e.error.empty()) old[h.filesystems[e.fs].Key()][e.ino] = Old{e.path, FileIdentity::Of(e)};
        return Status::Ok();
      });
  if (!r.ok()) return r.status();
  auto n = ReadIndex(
      new_path, ro, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
        for (auto& e : batch) {
          if (!e.error.empty()) continue;
          auto& fs = old[h.filesystems[e.fs].Key()];
          auto it = fs.find(e.ino);
          if (it == fs.end()) {
            stats->added++;
            on_entry({DiffKind::kAdded, e.path, "", e.size, 0});
            continue;
          }
          Old& o = it->second;
          o.seen = true;
          bool same = true;
          if (o.path != e.path) {
            stats->renamed++;
            same = false;
            on_entry({DiffKind::kRenamed, e.path, o.path, e.size, o.id.size});
          }
          if (!FileIdentity::Of(e).UnchangedFrom(o.id)) {
            stats->changed++;
            same = false;
            on_entry({DiffKind::kChanged, e.path, "", e.size, o.id.size});
          }
          if (same) stats->unchanged++;
        }
        return Status::Ok();
      });
  if (!n.ok()) return n.status();
  for (auto& [fs, inodes] : old)
    for (auto& [ino, o] : inodes)
      if (!o.seen) {
        stats->removed++;
        on_entry({DiffKind::kRemoved, o.path, "", 0, o.id.size});
      }
  return Status::Ok();
}

}  // namespace oans
