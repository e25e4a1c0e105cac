// FollowState: the previous index streamed (directories, then files carried or set aside).
#include <sys/stat.h>

#include <algorithm>

#include "lib/base/heap.h"
#include "lib/base/paths.h"
#include "lib/scan/follow_state.h"

namespace oans {

// Each previous filesystem's root now, whether it is gone, or the source of snapshots
// taken since.
void FollowState::MapFilesystems(const IndexHeader& prev) {
  root_of_fs_.assign(prev.filesystems.size() + clones.size(), -1);
  for (size_t i = 0; i < roots.size(); ++i) root_of_fs_[roots[i].fs] = int(i);
  for (uint32_t k : gone) root_of_fs_[k] = kGoneFs;
  if (!gone.empty()) changes_++;  // their records are dropped
  clones_of_.assign(prev.filesystems.size(), {});
  for (const auto& c : clones) clones_of_[c.from_fs].push_back(&c);
  if (!clones.empty()) changes_++;  // their records are new
}

FollowWhy FollowState::StreamPrevious(const IndexHeader& prev) {
  const KeepFreedTop keep;  // the previous index's frames read, the new one's batches built
  MapFilesystems(prev);
  int sections = 0;
  // Reading ends with the reason itself as its error, when there is one.
  auto stop = [this] { return Status::Invalid("not following btrfs changes: " + why_.text); };
  IndexReadOptions ro;
  FrameSpan span;
  ro.span = &span;
  bool frame_has_dirs = false;
  uint64_t kept_hardlinks = 0;
  ro.on_dirs = [&](const IndexHeader&, std::vector<IndexDir>& dirs) {
    frame_has_dirs = true;
    if (dirs_done_) {
      why_ = {NoFollow::kDamagedIndex, "the previous index has directory records after file records"};
      return stop();
    }
    for (auto& d : dirs) {
      why_ = CloneDir(d);
      if (!why_.empty()) return stop();
      prev_dirs_.push_back(std::move(d));
    }
    return Status::Ok();
  };
  // A batch whose records are all carried as they were is copied frame and all, read
  // in place: nothing is decoded, nothing encoded again.
  ro.keep_encoded = [&](const IndexHeader&, const BatchView& batch) {
    const bool has_dirs = frame_has_dirs;
    frame_has_dirs = false;
    if (has_dirs || batch.size() == 0 || !why_.empty()) return false;
    if (!dirs_done_) {
      dirs_done_ = true;
      why_ = FinishDirs();
      if (!why_.empty()) return false;
    }
    return KeepEncoded(batch, &kept_hardlinks);
  };
  ro.on_encoded = [&](const IndexHeader&, const IndexTotals& counted) {
    CountCarried(counted.records, counted.bytes, kept_hardlinks);
    KeepWrite(file_writer_->AppendFrame(span, counted));
    return Status::Ok();
  };
  auto r = ReadIndex(
      o_.previous, ro,
      [&](const IndexHeader& h) {
        // Read twice: the header matched against the filesystems must be this one.
        if (h.created_ns != prev.created_ns || h.filesystems.size() != prev.filesystems.size()) {
          why_ = {NoFollow::kDamagedIndex, "the previous index changed while it was read"};
          return stop();
        }
        if (sections++ == 0) return Status::Ok();
        why_ = {NoFollow::kDamagedIndex, "the previous index has several sections"};
        return stop();
      },
      [&](const IndexHeader&, std::vector<FileEntry>& batch) {
        if (!why_.empty()) return stop();
        if (batch.empty()) return Status::Ok();
        if (!dirs_done_) {
          dirs_done_ = true;
          why_ = FinishDirs();
        }
        for (size_t i = 0; i < batch.size() && why_.empty(); ++i) why_ = CarryWithClones(batch[i]);
        if (!why_.empty()) return stop();
        return Status::Ok();
      });
  if (!why_.empty()) return why_;
  if (!r.ok()) return {NoFollow::kDamagedIndex, "the previous index cannot be read to its end"};
  if (r->truncated) return {NoFollow::kDamagedIndex, "the previous index is incomplete"};
  if (!dirs_done_) {
    dirs_done_ = true;
    return FinishDirs();
  }
  return {};
}

namespace {

// Moves `path` from below the clone's source to below the snapshot; false when it is
// not below the source.
bool Reroot(std::string* path, const FollowClone& c) {
  if (!PathWithin(*path, c.from_path)) return false;
  *path = c.to_path + (c.from_path == "/" ? *path : path->substr(c.from_path.size()));
  return true;
}

}  // namespace

const std::vector<const FollowClone*>& FollowState::ClonesOf(uint32_t fs) const {
  static const std::vector<const FollowClone*> none;
  return fs < clones_of_.size() ? clones_of_[fs] : none;
}

FollowWhy FollowState::CloneDir(const IndexDir& d) {
  for (const FollowClone* c : ClonesOf(d.fs)) {
    // The copies are held until every directory is read, as the previous ones are.
    clone_dir_bytes_ += sizeof(IndexDir) + d.path.size();
    if (clone_dir_bytes_ > o_.memory / 4)
      return {NoFollow::kTooManyChanges, "the snapshots taken since hold more directories than a quarter of --memory holds"};
    IndexDir x = d;
    x.fs = c->to_fs;
    if (!Reroot(&x.path, *c)) return {NoFollow::kDamagedIndex, "a directory record of " + c->from_path + " lies outside it: " + d.path};
    prev_dirs_.push_back(std::move(x));
  }
  return {};
}

FollowWhy FollowState::CarryWithClones(FileEntry& e) {
  for (const FollowClone* c : ClonesOf(e.fs)) {
    FileEntry x = e;
    x.fs = c->to_fs;
    x.dev = roots[c->root].dev;
    bool below = Reroot(&x.path, *c);
    for (auto& p : x.other_paths) below = below && Reroot(&p, *c);
    if (!below) return {NoFollow::kDamagedIndex, "a file record of " + c->from_path + " lies outside it: " + e.path};
    FollowWhy why = CarryOne(x);
    if (!why.empty()) return why;
  }
  return CarryOne(e);
}

FollowWhy FollowState::CarryOne(FileEntry& e) {
  bool untouched = false;
  FollowWhy why = CarryFile(e, &untouched);
  if (!why.empty() || !untouched) return why;
  CountCarried(1, e.size, e.other_paths.size());
  e.reused = true;
  KeepWrite(file_writer_->Add(std::move(e)));
  return {};
}

// With every directory record read: which of them were renamed, moved or removed
// (PathMap), which changed directories are new, and the new directory records.
FollowWhy FollowState::FinishDirs() {
  std::erase_if(prev_dirs_, [&](const IndexDir& d) { return d.fs < root_of_fs_.size() && root_of_fs_[d.fs] == kGoneFs; });
  for (const auto& d : prev_dirs_) {
    if (d.fs >= root_of_fs_.size() || root_of_fs_[d.fs] < 0) return {NoFollow::kDamagedIndex, "a directory record names no root's filesystem"};
    const FollowRoot& r = roots[root_of_fs_[d.fs]];
    if (d.ino == kBtrfsFirstInode && r.path != r.top && d.path != r.path)
      return {NoFollow::kSubvolumeChanged, "subvolume " + d.path + " was moved to " + r.path};
    if (!roots[root_of_fs_[d.fs]].changed.count(d.ino)) continue;
    auto it = dirs_.find({d.fs, d.ino});
    if (it == dirs_.end()) {  // removed, moved out of the roots, or excluded now
      moved_[d.fs].Remove(d.path);
      continue;
    }
    it->second.known = true;
    dirs_by_old_path_[d.fs][d.path] = &it->second;
    if (it->second.path != d.path) moved_[d.fs].Rename(d.path, it->second.path);
  }
  // A removed directory leaves no item to find; its parent changed, without it. A
  // subvolume's top is no entry of its parent's: it was found where it was.
  for (const auto& d : prev_dirs_) {
    if (roots[root_of_fs_[d.fs]].changed.count(d.ino) || d.ino == kBtrfsFirstInode) continue;
    if (!StillLinked(d.fs, d.path, d.ino)) moved_[d.fs].Remove(d.path);
  }
  if (!moved_.empty()) changes_++;
  for (const auto& [key, dir] : dirs_) {
    if (dir.known) continue;
    changes_++;
    const FollowRoot& r = roots[root_of_fs_[key.first]];
    // A new directory holds only new (changed) inodes, unless one was moved in from
    // outside the roots with everything below it: that needs a walk.
    for (const auto& [name, ino] : dir.entries)
      if (!r.changed.count(ino)) return {NoFollow::kMovedIn, PathJoin(dir.path, name) + " was moved in from outside the scanned tree"};
    KeepWrite(dir_writer_->AddDir({dir.path, key.first, key.second, dir.mtime_ns, dir.ctime_ns}));
  }
  for (auto& d : prev_dirs_) {
    const FollowRoot& r = roots[root_of_fs_[d.fs]];
    if (r.changed.count(d.ino)) {
      auto it = dirs_.find({d.fs, d.ino});
      if (it != dirs_.end())
        KeepWrite(dir_writer_->AddDir({it->second.path, d.fs, d.ino, it->second.mtime_ns, it->second.ctime_ns}));
      continue;
    }
    auto now = Moved(d.fs).Map(d.path);
    if (!now || (*now != d.path && Excluded(r, *now))) continue;
    d.path = *now;
    KeepWrite(dir_writer_->AddDir(std::move(d)));
  }
  stats_->dirs = dir_writer_->totals().dirs;
  std::vector<IndexDir>().swap(prev_dirs_);
  return {};
}

namespace {

// A record's fields CarriedAsIs asks, decoded or read in place.
struct EntryAt {
  const FileEntry& e;
  uint32_t fs() const { return e.fs; }
  uint64_t ino() const { return e.ino; }
  bool has_error() const { return !e.error.empty(); }
  bool unread() const { return !e.hashed && e.error.empty(); }
  std::string_view path() const { return e.path; }
  size_t other_path_count() const { return e.other_paths.size(); }
  std::string_view other_path(size_t j) const { return e.other_paths[j]; }
};
struct ViewAt {
  const BatchView& v;
  size_t i;
  uint32_t fs() const { return v.fs(i); }
  uint64_t ino() const { return v.ino(i); }
  bool has_error() const { return v.has_error(i); }
  bool unread() const { return !v.hashed(i) && !v.has_error(i); }
  std::string_view path() const { return v.path(i); }
  size_t other_path_count() const { return v.other_path_count(i); }
  std::string_view other_path(size_t j) const { return v.other_path(i, j); }
};

}  // namespace

const PathMap& FollowState::Moved(uint32_t fs) const {
  static const PathMap none;
  auto it = moved_.find(fs);
  return it == moved_.end() ? none : it->second;
}

bool FollowState::StillLinked(uint32_t fs, std::string_view p, uint64_t ino) const {
  auto dirs = dirs_by_old_path_.find(fs);
  if (dirs == dirs_by_old_path_.end()) return true;  // no directory of its changed
  auto parent = dirs->second.find(PathDirname(p));
  if (parent == dirs->second.end()) return true;  // its directory did not change
  return parent->second->Find(PathBasename(p)) == ino;
}

template <typename R>
bool FollowState::CarriedAsIs(const R& e) const {
  const uint32_t fs = e.fs();
  if (e.ino() == 0 || fs >= root_of_fs_.size() || root_of_fs_[fs] < 0 || e.has_error() || e.unread()) return false;
  if (roots[root_of_fs_[fs]].changed.count(e.ino())) return false;
  const PathMap& moved = Moved(fs);
  auto linked = [&](std::string_view p) { return StillLinked(fs, p, e.ino()) && !moved.Moves(p); };
  if (!linked(e.path())) return false;
  for (size_t j = 0; j < e.other_path_count(); ++j)
    if (!linked(e.other_path(j))) return false;
  return true;
}

bool FollowState::KeepEncoded(const BatchView& batch, uint64_t* hardlinks) {
  if (o_.stop && o_.stop->load()) return false;  // decoded, the stop is said
  *hardlinks = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!CarriedAsIs(ViewAt{batch, i}) || !ClonesOf(batch.fs(i)).empty()) return false;
    // Mounted again under another device number (after a reboot): the record is written
    // again with the new one, as a walk records it.
    if (batch.dev(i) != roots[root_of_fs_[batch.fs(i)]].dev) return false;
    if (quiet_ && quiet_->IsMoved(batch.fs(i), batch.ino(i))) return false;  // new extents to write
    if (!by_first_physical_.empty()) {
      auto first = batch.first_physical(i);
      if (first && by_first_physical_.count(*first)) return false;
    }
    *hardlinks += batch.other_path_count(i);
  }
  return true;
}

void FollowState::CountCarried(uint64_t records, uint64_t bytes, uint64_t hardlinks) {
  stats_->files += records;
  stats_->bytes += bytes;
  stats_->reused += records;
  stats_->unopened += records;
  stats_->hardlinks += hardlinks;
}

// One file record of the previous index: carried (paths mapped), set aside for the
// changed files, or dropped with its last link.
FollowWhy FollowState::CarryFile(FileEntry& e, bool* untouched) {
  if (o_.stop && o_.stop->load()) return {NoFollow::kStopped, "the scan was stopped"};
  if (e.ino == 0) return {NoFollow::kUnreadRecord, "the previous scan could not read " + e.path};
  // A file of a unique size recorded unread: a walk reads it if its size is met again.
  if (!e.hashed && e.error.empty()) return {NoFollow::kUnreadRecord, "the previous scan left " + e.path + " unread"};
  if (e.fs < root_of_fs_.size() && root_of_fs_[e.fs] == kGoneFs) return {};  // its subvolume is gone
  if (e.fs >= root_of_fs_.size() || root_of_fs_[e.fs] < 0) return {NoFollow::kDamagedIndex, "a file record names no root's filesystem"};
  FollowRoot& r = roots[root_of_fs_[e.fs]];
  if (e.dev != r.dev) {  // mounted again under another device number
    e.dev = r.dev;
    changes_++;
  }
  if (r.changed.count(e.ino)) {
    // Looked at again; if it still holds the data its record names, a reflinked copy
    // made since may take its keys.
    if (!by_first_physical_.empty()) MatchIfUnchanged(e);
    before_[{e.fs, e.ino}] = std::move(e);
    return {};
  }
  // The same data, moved by a dedupe: the same keys, the new extents.
  auto moved = quiet_ ? quiet_->Moved(e.fs, e.ino) : std::optional<MovedExtents>();
  if (moved && moved->damaged)  // never written so: memory went bad, or a bug
    return {NoFollow::kDamagedIndex, "the new extents kept for " + e.path + " read back damaged"};
  if (moved) {
    e.extents = std::move(moved->extents);
    e.inode_flags = moved->inode_flags;
  }
  // Only an inode that is still there, unchanged, holds its recorded extents: the space
  // of a changed or removed one may have been freed and written again with other data.
  if (!moved && CarriedAsIs(EntryAt{e})) {
    if (!by_first_physical_.empty()) MatchExtents(e);
    *untouched = true;  // the caller counts and writes it
    return {};
  }
  std::vector<std::string> paths;
  auto keep = [&](const std::string& p) {
    if (!StillLinked(e.fs, p, e.ino)) return;  // this link is gone
    auto now = Moved(e.fs).Map(p);
    if (now && (*now == p || !Excluded(r, *now))) paths.push_back(*now);
  };
  keep(e.path);
  for (const auto& p : e.other_paths) keep(p);
  changes_++;                    // removed, its paths changed, or read again
  if (paths.empty()) return {};  // removed
  std::sort(paths.begin(), paths.end());
  e.path = paths[0];
  e.other_paths.assign(paths.begin() + 1, paths.end());
  // A file the previous scan could not read is tried again, at its paths now.
  if (!e.error.empty()) {
    retry_.push_back(std::move(e));
    return {};
  }
  if (!by_first_physical_.empty()) MatchExtents(e);
  e.reused = true;
  stats_->unopened++;
  KeepWrite(Add(std::move(e)));
  return {};
}

}  // namespace oans
