#include "lib/plan/diff.h"

#include "lib/base/spill.h"
#include "lib/plan/identity.h"

namespace oans {
namespace {

// One index of the two: every file the scan could read, as a FileKey sorted by
// (filesystem, inode), and its path in a record store (FileKey::at).
struct Side {
  Side(const std::string& dir, uint64_t budget) : keys(dir, budget / 2), paths(dir, budget / 2) {}
  Status Load(const std::string& path, FilesystemIds* ids) {
    IndexReadOptions ro;
    ro.allow_truncated = true;
    std::vector<uint32_t> fs_of;
    uint64_t seq = 0;
    auto r = ReadIndex(
        path, ro,
        [&](const IndexHeader& h) {
          fs_of = ids->Of(h.filesystems);
          return Status::Ok();
        },
        [&](const IndexHeader&, std::vector<FileEntry>& batch) -> Status {
          for (auto& e : batch) {
            if (!e.error.empty()) continue;
            OANS_ASSIGN_OR_RETURN(auto at, paths.Add(e.path));
            OANS_RETURN_IF_ERROR(keys.Add({fs_of[e.fs], 0, e.ino, seq++, at, FileIdentity::Of(e)}));
          }
          return Status::Ok();
        });
    return r.status();
  }
  Result<std::string> Path(const FileKey& k) const {
    std::string p;
    OANS_RETURN_IF_ERROR(paths.Get(k.at, &p));
    return p;
  }
  ExternalSorter<FileKey, FileKeyLess> keys;
  RecordStore paths;
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
                   const std::function<void(const DiffEntry&)>& on_entry, DiffStats* stats, uint64_t memory,
                   const std::string& temp_dir) {
  const std::string dir = TempDirectory(temp_dir);
  FilesystemIds ids;
  Side old_side(dir, memory / 2), new_side(dir, memory / 2);
  OANS_RETURN_IF_ERROR(old_side.Load(old_path, &ids));
  OANS_RETURN_IF_ERROR(new_side.Load(new_path, &ids));
  OANS_ASSIGN_OR_RETURN(auto old_files, old_side.keys.Take());
  OANS_ASSIGN_OR_RETURN(auto new_files, new_side.keys.Take());
  auto inode = [](const FileKey& k) { return k.inode(); };
  return MergeJoin(*old_files, *new_files, inode, inode, [&](const FileKey* o, const FileKey* n) -> Status {
    OANS_ASSIGN_OR_RETURN(auto path, n ? new_side.Path(*n) : old_side.Path(*o));
    if (!o) {
      stats->added++;
      on_entry({DiffKind::kAdded, path, "", n->identity.size, 0});
      return Status::Ok();
    }
    if (!n) {
      stats->removed++;
      on_entry({DiffKind::kRemoved, path, "", 0, o->identity.size});
      return Status::Ok();
    }
    bool same = true;
    OANS_ASSIGN_OR_RETURN(auto before, old_side.Path(*o));
    if (before != path) {
      stats->renamed++;
      same = false;
      on_entry({DiffKind::kRenamed, path, before, n->identity.size, o->identity.size});
    }
    if (!n->identity.UnchangedFrom(o->identity)) {
      stats->changed++;
      same = false;
      on_entry({DiffKind::kChanged, path, "", n->identity.size, o->identity.size});
    }
    if (same) stats->unchanged++;
    return Status::Ok();
  });
}

}  // namespace oans
