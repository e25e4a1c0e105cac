// FollowState: the previous index streamed (directories, then files carried or set aside).
#include <sys/stat.h>

#include <algorithm>

#include "lib/scan/follow_state.h"

namespace oans {

std::string FollowState::StreamPrevious(const IndexHeader& prev) {
  root_of_fs_.assign(prev.filesystems.size(), -1);
  for (size_t i = 0; i < roots.size(); ++i) root_of_fs_[roots[i].fs] = int(i);
  int sections = 0;
  const Status stop = Status::Interrupted("not following");
  IndexReadOptions ro;
  FrameSpan span;
  ro.span = &span;
  bool frame_has_dirs = false;
  ro.on_dirs = [&](const IndexHeader&, std::vector<IndexDir>& dirs) {
    frame_has_dirs = true;
    if (dirs_done_) {
      why_ = "the previous index has directory records after file records";
      return stop;
    }
    for (auto& d : dirs) prev_dirs_.push_back(std::move(d));
    return Status::Ok();
  };
  auto r = ReadIndex(
      o_.previous, ro,
      [&](const IndexHeader&) {
        if (sections++ == 0) return Status::Ok();
        why_ = "the previous index has several sections";
        return stop;
      },
      [&](const IndexHeader&, std::vector<FileEntry>& batch) {
        if (batch.empty()) return Status::Ok();
        if (!dirs_done_) {
          dirs_done_ = true;
          why_ = FinishDirs();
        }
        // Records carried as they were are copied with their frame when the whole frame
        // is: nothing decoded is encoded again.
        std::vector<FileEntry*> same;
        for (size_t i = 0; i < batch.size() && why_.empty(); ++i) {
          bool untouched = false;
          why_ = CarryFile(batch[i], &untouched);
          if (untouched) same.push_back(&batch[i]);
        }
        const bool whole = same.size() == batch.size() && !frame_has_dirs;
        frame_has_dirs = false;
        if (!why_.empty()) return stop;
        IndexTotals counted;
        for (FileEntry* e : same) {
          stats_->files++;
          stats_->bytes += e->size;
          stats_->reused++;
          stats_->unopened++;
          stats_->hardlinks += e->other_paths.size();
          counted.records++;
          counted.bytes += e->size;
          if (!whole) {
            e->reused = true;
            KeepWrite(file_writer_->Add(std::move(*e)));
          }
        }
        counted.batches = 1;
        if (whole) KeepWrite(file_writer_->AppendFrame(span, counted));
        return Status::Ok();
      });
  if (!why_.empty()) return why_;
  if (!r.ok()) return "the previous index cannot be read to its end";
  if (r->truncated) return "the previous index is incomplete";
  if (!dirs_done_) {
    dirs_done_ = true;
    return FinishDirs();
  }
  return "";
}

// With every directory record read: which of them were renamed, moved or removed
// (PathMap), which changed directories are new, and the new directory records.
std::string FollowState::FinishDirs() {
  for (const auto& d : prev_dirs_) {
    if (d.fs >= root_of_fs_.size() || root_of_fs_[d.fs] < 0) return "a directory record names no root's filesystem";
    if (!roots[root_of_fs_[d.fs]].changed.count(d.ino)) continue;
    auto it = dirs_.find({d.fs, d.ino});
    if (it == dirs_.end()) {  // removed, moved out of the roots, or excluded now
      moved_.Remove(d.path);
      continue;
    }
    it->second.known = true;
    dirs_by_old_path_[d.path] = &it->second;
    if (it->second.path != d.path) moved_.Rename(d.path, it->second.path);
  }
  // A removed directory leaves no item to find; its parent changed, without it.
  for (const auto& d : prev_dirs_) {
    if (roots[root_of_fs_[d.fs]].changed.count(d.ino)) continue;
    auto parent = dirs_by_old_path_.find(PathDirname(d.path));
    if (parent == dirs_by_old_path_.end()) continue;
    auto e = parent->second->entries.find(PathBasename(d.path));
    if (e == parent->second->entries.end() || e->second != d.ino) moved_.Remove(d.path);
  }
  if (!moved_.empty()) changes_++;
  for (const auto& [key, dir] : dirs_) {
    if (dir.known) continue;
    changes_++;
    const FollowRoot& r = roots[root_of_fs_[key.first]];
    // A new directory holds only new (changed) inodes, unless one was moved in from
    // outside the roots with everything below it: that needs a walk.
    for (const auto& [name, ino] : dir.entries)
      if (!r.changed.count(ino)) return PathJoin(dir.path, name) + " was moved in from outside the scanned tree";
    if (dir.path != r.path) KeepWrite(dir_writer_->AddDir({dir.path, key.first, key.second}));
  }
  for (auto& d : prev_dirs_) {
    const FollowRoot& r = roots[root_of_fs_[d.fs]];
    if (r.changed.count(d.ino)) {
      auto it = dirs_.find({d.fs, d.ino});
      if (it != dirs_.end()) KeepWrite(dir_writer_->AddDir({it->second.path, d.fs, d.ino}));
      continue;
    }
    auto now = moved_.Map(d.path);
    if (!now || (*now != d.path && Excluded(r, *now))) continue;
    d.path = *now;
    KeepWrite(dir_writer_->AddDir(std::move(d)));
  }
  stats_->dirs = dir_writer_->totals().dirs;
  std::vector<IndexDir>().swap(prev_dirs_);
  return "";
}

// One file record of the previous index: carried (paths mapped), set aside for the
// changed files, or dropped with its last link.
std::string FollowState::CarryFile(FileEntry& e, bool* untouched) {
  if (o_.stop && o_.stop->load()) return "the scan was stopped";
  if (e.ino == 0) return "the previous scan could not read " + e.path;
  if (e.fs >= root_of_fs_.size() || root_of_fs_[e.fs] < 0) return "a file record names no root's filesystem";
  FollowRoot& r = roots[root_of_fs_[e.fs]];
  if (r.changed.count(e.ino)) {
    before_[{e.fs, e.ino}] = std::move(e);
    return "";
  }
  if (!e.error.empty()) {
    changes_++;
    retry_.push_back(std::move(e));
    return "";
  }
  std::vector<std::string> paths;
  auto keep = [&](const std::string& p) {
    auto parent = dirs_by_old_path_.find(PathDirname(p));
    if (parent != dirs_by_old_path_.end()) {
      auto x = parent->second->entries.find(PathBasename(p));
      if (x == parent->second->entries.end() || x->second != e.ino) return;  // this link is gone
    }
    auto now = moved_.Map(p);
    if (now && (*now == p || !Excluded(r, *now))) paths.push_back(*now);
  };
  keep(e.path);
  for (const auto& p : e.other_paths) keep(p);
  // Only an inode that is still there, unchanged, holds its recorded extents: the space
  // of a changed or removed one may have been freed and written again with other data.
  if (!paths.empty() && !by_first_physical_.empty()) MatchExtents(e);
  if (paths.size() == 1 + e.other_paths.size() && paths[0] == e.path &&
      std::equal(e.other_paths.begin(), e.other_paths.end(), paths.begin() + 1)) {
    *untouched = true;  // the caller counts and writes it
    return "";
  }
  changes_++;                    // removed, or its paths changed
  if (paths.empty()) return "";  // removed
  std::sort(paths.begin(), paths.end());
  e.path = paths[0];
  e.other_paths.assign(paths.begin() + 1, paths.end());
  e.reused = true;
  stats_->unopened++;
  KeepWrite(Add(std::move(e)));
  return "";
}

}  // namespace oans
