#include "lib/plan/since.h"

namespace oans {

Status SinceJoin::CheckStop() const {
  if (stop_ && stop_->load(std::memory_order_relaxed)) return Status::Interrupted("stopped by a signal");
  return Status::Ok();
}

Status SinceJoin::LoadOld(const std::string& path, FilesystemIds* ids, bool* truncated) {
  IndexReadOptions ro;
  ro.allow_truncated = true;
  uint64_t seq = 0;
  std::vector<uint32_t> fs_of;
  auto r = ReadIndex(
      path, ro,
      [&](const IndexHeader& h) {
        fs_of = ids->Of(h.filesystems);
        return Status::Ok();
      },
      [&](const IndexHeader&, std::vector<FileEntry>& batch) -> Status {
        OANS_RETURN_IF_ERROR(CheckStop());
        for (auto& e : batch) {
          const uint64_t at = seq++;
          if (e.hashed) OANS_RETURN_IF_ERROR(old_.Add({fs_of[e.fs], 0, e.ino, at, 0, FileIdentity::Of(e)}));
        }
        return Status::Ok();
      });
  if (!r.ok()) return r.status().Prepend("--since");
  *truncated = r->truncated;
  return Status::Ok();
}

Status SinceJoin::MarkUnchanged(std::vector<bool>* changed) {
  OANS_ASSIGN_OR_RETURN(auto old_files, old_.Take());
  OANS_ASSIGN_OR_RETURN(auto new_files, new_.Take());
  auto inode = [](const FileKey& k) { return k.inode(); };
  uint64_t done = 0;
  return MergeJoin(*old_files, *new_files, inode, inode, [&](const FileKey* before, const FileKey* now) -> Status {
    if (++done % 1024 == 0) OANS_RETURN_IF_ERROR(CheckStop());
    if (before && now && now->identity.UnchangedFrom(before->identity)) (*changed)[now->seq] = false;
    return Status::Ok();
  });
}

}  // namespace oans
