// FollowState: the changed files recorded, and the new index written.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include <tbb/parallel_for.h>

#include "lib/scan/entry.h"
#include "lib/scan/follow_state.h"

namespace oans {

std::string FollowState::FinishChanged() {
  struct Todo {
    FollowRoot* root;
    uint64_t ino;
    std::vector<std::string> paths;
  };
  std::vector<Todo> todo;
  for (auto& r : roots)
    for (const auto& c : r.changes.inodes) {
      if (!c.exists || !S_ISREG(c.item.mode)) continue;
      std::vector<std::string> paths;
      for (const auto& [dir, name] : c.links) {
        auto p = PathOf(r, dir, name);
        if (p && !Excluded(r, *p)) paths.push_back(*p);
      }
      if (paths.empty()) continue;  // outside the roots, or excluded
      std::sort(paths.begin(), paths.end());
      todo.push_back({&r, c.ino, std::move(paths)});
    }
  // Files the previous scan could not read are tried again, by their recorded paths.
  for (auto& e : retry_) {
    std::vector<std::string> paths{e.path};
    paths.insert(paths.end(), e.other_paths.begin(), e.other_paths.end());
    todo.push_back({&roots[root_of_fs_[e.fs]], e.ino, std::move(paths)});
  }
  std::vector<FileEntry>().swap(retry_);
  // Changed files are opened, mapped and (unless unchanged in data) read in parallel.
  std::mutex mu;
  tbb::parallel_for(size_t(0), todo.size(), [&](size_t i) {
    FileEntry e;
    if (!RecordFile(*todo[i].root, todo[i].ino, todo[i].paths, &e)) return;
    std::lock_guard<std::mutex> lock(mu);
    KeepWrite(Add(std::move(e)));
  });
  stats_->bytes_read = bytes_read_.load();
  return "";
}

bool FollowState::RecordFile(FollowRoot& r, uint64_t ino, const std::vector<std::string>& paths, FileEntry* out) {
  if (o_.stop && o_.stop->load()) return false;
  auto fd = sys_.OpenNoFollow(paths[0]);
  if (!fd.ok()) return false;  // gone since the search: the next scan sees its directory change
  auto st = sys_.Fstat(*fd);
  // Another inode at this path now was itself changed, and is recorded by its own number.
  if (!st.ok() || st->ino != ino || st->dev != r.dev || !S_ISREG(st->mode) || st->size == 0 ||
      st->size < o_.min_size) {
    sys_.Close(*fd);
    return false;
  }
  WalkEntry w{paths[0], *st, uint32_t(&r - roots.data())};
  FileEntry e = EntryOf(w, r.fs);
  e.other_paths.assign(paths.begin() + 1, paths.end());
  const bool mapped = sys_.Fiemap(*fd, &e.extents).ok();
  e.inode_flags = sys_.InodeFlags(*fd);
  bool done = true;
  auto before = before_.find({r.fs, ino});
  if (mapped && before != before_.end() && before->second.hashed &&
      FileIdentity::Of(e).HashesStillValid(FileIdentity::Of(before->second))) {
    e.hash = before->second.hash;
    e.block_hashes = before->second.block_hashes;
    e.hashed = e.reused = true;
  } else {
    thread_local std::vector<char> buffer;
    done = ReadOpen(sys_, *fd, mapped, "", nothing_, o_, &buffer, &bytes_read_, &e);
  }
  sys_.Close(*fd);
  *out = std::move(e);
  return done;
}

Status FollowState::Add(FileEntry e) {
  if (e.reused) stats_->reused++;
  else if (e.hashed) stats_->hashed++;
  if (!e.error.empty()) {
    stats_->errors++;
    observer_->Notice(e.path + ": " + e.error);
  }
  stats_->files++;
  stats_->bytes += e.size;
  stats_->hardlinks += e.other_paths.size();
  return file_writer_->Add(std::move(e));
}

Status FollowState::WriteInto(const IndexHeader& header, OutputFile* out) {
  OANS_RETURN_IF_ERROR(write_status_);
  IndexWriter w(out);
  OANS_RETURN_IF_ERROR(w.WriteHeader(header));
  OANS_RETURN_IF_ERROR(dir_writer_->Flush());
  OANS_RETURN_IF_ERROR(w.AppendFrames(*dir_spool_, dir_writer_->totals()));
  OANS_RETURN_IF_ERROR(file_writer_->Flush());
  OANS_RETURN_IF_ERROR(w.AppendFrames(*file_spool_, file_writer_->totals()));
  if (o_.stop && o_.stop->load()) return w.Flush();
  return w.Finish();
}

}  // namespace oans
