// FollowState: the changed files mapped, matched, hashed and recorded; the new index written.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include <tbb/parallel_for.h>

#include "lib/base/fd.h"
#include "lib/base/heap.h"
#include "lib/base/paths.h"
#include "lib/base/tsan.h"
#include "lib/scan/entry.h"
#include "lib/scan/follow_state.h"

namespace oans {
namespace {

// tbb::parallel_for, with the orderings it gives (the bodies run after the code before
// it, the code after it runs after every body) stated for ThreadSanitizer (lib/base/tsan.h).
template <typename F>
void ParallelFor(size_t n, const F& body) {
  char start = 0, done = 0;
  OANS_TSAN_RELEASE(&start);
  tbb::parallel_for(size_t(0), n, [&](size_t i) {
    OANS_TSAN_ACQUIRE(&start);
    body(i);
    OANS_TSAN_RELEASE(&done);
  });
  OANS_TSAN_ACQUIRE(&done);
}

constexpr uint32_t kInodeNoCow = 0x800000;  // FS_NOCOW_FL: data is overwritten in place

// Extents that name their data by physical address alone: no inline data, no delayed
// allocation, nothing encoded (a compressed extent's address does not say which part),
// nothing preallocated (written in place the first time), and a file whose data is
// always written in place (nodatacow) never.
bool PlainExtents(const std::vector<FiemapExtent>& x, uint32_t inode_flags) {
  if (inode_flags & kInodeNoCow) return false;
  for (const auto& e : x)
    if (e.flags & (kExtentInline | kExtentDelalloc | kExtentUnknown | kExtentEncoded | kExtentUnwritten))
      return false;
  return !x.empty();
}

bool SameExtents(const std::vector<FiemapExtent>& a, const std::vector<FiemapExtent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].logical != b[i].logical || a[i].physical != b[i].physical || a[i].length != b[i].length ||
        (a[i].flags & ~kExtentShared) != (b[i].flags & ~kExtentShared))
      return false;
  return true;
}

// Whether a changed inode's new record says all its previous one said.
bool SameRecord(const FileEntry& a, const FileEntry& b) {
  return a.path == b.path && a.other_paths == b.other_paths && a.size == b.size && a.mtime_ns == b.mtime_ns &&
         a.ctime_ns == b.ctime_ns && a.nlink == b.nlink && a.uid == b.uid && a.gid == b.gid &&
         a.inode_flags == b.inode_flags && a.hashed == b.hashed &&
         a.hash == b.hash && a.block_hashes == b.block_hashes && a.error == b.error && a.sum_kind == b.sum_kind &&
         a.key_kind == b.key_kind && a.sector_sums == b.sector_sums &&
         SameExtents(a.extents, b.extents);
}

}  // namespace

FollowWhy FollowState::MapChanged() {
  size_t regular = 0;
  for (const auto& r : roots)
    for (const auto& c : r.changes.inodes) regular += c.exists && S_ISREG(c.item.mode);
  files_.reserve(regular);
  for (auto& r : roots)
    for (const auto& c : r.changes.inodes) {
      if (!c.exists || !S_ISREG(c.item.mode)) continue;
      ChangedFile f;
      for (const auto& [dir, name] : c.links) {
        FollowWhy why;
        auto p = PathOf(r, dir, name, &why);
        if (!why.empty()) return why;
        if (p && !Excluded(r, *p)) f.paths.push_back(*p);
      }
      if (f.paths.empty()) continue;  // outside the roots, or excluded
      std::sort(f.paths.begin(), f.paths.end());
      f.root = &r;
      f.ino = c.ino;
      f.item = &c;
      files_.push_back(std::move(f));
    }
  ParallelFor(files_.size(), [&](size_t i) { MapFile(&files_[i]); });
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i].present && files_[i].mapped && PlainExtents(files_[i].entry.extents, files_[i].entry.inode_flags))
      by_first_physical_[files_[i].entry.extents[0].physical].push_back(i);
  return {};
}

// From the file's items when they map it, as a walk does on btrfs; else opened.
void FollowState::MapFile(ChangedFile* f) {
  const ChangedInode* c = f->item;
  if (!c || !c->mapped || c->map.extents.empty()) return MapOpened(f);
  const FileStat st = c->map.Stat(f->root->dev);
  if (!S_ISREG(st.mode) || st.size == 0 || st.size < o_.min_size) return;
  WalkEntry w{f->paths[0], st, uint32_t(f->root - roots.data())};
  f->entry = EntryOf(w, f->root->fs);
  f->entry.other_paths.assign(f->paths.begin() + 1, f->paths.end());
  f->entry.extents = c->map.extents;
  f->entry.inode_flags = c->map.inode_flags;
  f->mapped = f->present = f->from_items = true;
}

void FollowState::MapOpened(ChangedFile* f) {
  f->present = f->mapped = f->from_items = false;
  if (o_.stop && o_.stop->load()) return;
  auto fd = Own(sys_, sys_.OpenNoFollow(f->paths[0]));
  if (!fd.ok()) return;  // gone since the search: the next scan sees its directory change
  auto st = sys_.Fstat(fd->get());
  // Another inode at this path now was itself changed, and is recorded by its own number.
  if (st.ok() && st->ino == f->ino && st->dev == f->root->dev && S_ISREG(st->mode) && st->size > 0 &&
      st->size >= o_.min_size) {
    WalkEntry w{f->paths[0], *st, uint32_t(f->root - roots.data())};
    f->entry = EntryOf(w, f->root->fs);
    f->entry.other_paths.assign(f->paths.begin() + 1, f->paths.end());
    f->mapped = sys_.Fiemap(fd->get(), &f->entry.extents).ok();
    f->entry.inode_flags = sys_.InodeFlags(fd->get());
    f->present = true;
  }
}

void FollowState::MatchExtents(const FileEntry& e) {
  if (!e.hashed || !e.error.empty() || !PlainExtents(e.extents, e.inode_flags)) return;
  auto it = by_first_physical_.find(e.extents[0].physical);
  if (it == by_first_physical_.end()) return;
  const std::string& uuid = roots[root_of_fs_[e.fs]].id.uuid;  // addresses are per filesystem
  for (size_t i : it->second) {
    ChangedFile& f = files_[i];
    if (f.root->id.uuid != uuid) continue;
    if (f.same_extents || f.entry.size != e.size || !SameExtents(f.entry.extents, e.extents)) continue;
    f.same_extents = true;
    f.keys = std::make_unique<FileEntry>(e);
  }
}

void FollowState::MatchIfUnchanged(const FileEntry& e) {
  if (!e.hashed || !e.error.empty() || !PlainExtents(e.extents, e.inode_flags)) return;
  auto it = by_first_physical_.find(e.extents[0].physical);
  if (it == by_first_physical_.end()) return;
  const FollowRoot* root = &roots[root_of_fs_[e.fs]];
  for (size_t i : it->second) {
    const ChangedFile& f = files_[i];
    if (f.root != root || f.ino != e.ino) continue;
    // Not written since (a ctime nobody can set, recorded settled) and holding the very
    // extents recorded.
    if (Settled(e) && FileIdentity::Of(f.entry).HashesStillValid(FileIdentity::Of(e)) &&
        SameExtents(f.entry.extents, e.extents))
      MatchExtents(e);
    return;
  }
}

FollowWhy FollowState::FinishChanged() {
  // The records written from here on start a frame of their own: a plan --since the
  // previous index finds them there (IndexHeader::changed_at).
  KeepWrite(file_writer_->Flush());
  struct stat spooled;
  if (fstat(file_spool_->fd(), &spooled) != 0) KeepWrite(Status::Io("reading the scan's temporary spool", errno));
  changed_at_ = uint64_t(spooled.st_size);
  // Files the previous scan could not read are tried again, by their recorded paths.
  for (auto& e : retry_) {
    ChangedFile f;
    f.root = &roots[root_of_fs_[e.fs]];
    f.ino = e.ino;
    // Only paths below the record's root are opened, whatever the index says.
    f.paths.push_back(e.path);
    f.paths.insert(f.paths.end(), e.other_paths.begin(), e.other_paths.end());
    f.paths.erase(std::remove_if(f.paths.begin(), f.paths.end(),
                                 [&](const std::string& p) { return !PathWithin(p, f.root->path) || p == f.root->path; }),
                  f.paths.end());
    if (f.paths.empty()) continue;
    MapOpened(&f);
    files_.push_back(std::move(f));
  }
  std::vector<FileEntry>().swap(retry_);
  std::mutex mu;
  size_t matched = 0;
  ParallelFor(files_.size(), [&](size_t i) {
    if (!files_[i].present || !HashFile(&files_[i])) return;
    std::lock_guard<std::mutex> lock(mu);
    if (files_[i].same_extents && files_[i].entry.reused) stats_->same_extents++;
    auto before = before_.find({files_[i].root->fs, files_[i].ino});
    if (before == before_.end() || !SameRecord(files_[i].entry, before->second)) changes_++;
    else matched++;
    // What a merge join of the two indexes by inode would call new or changed (a new
    // snapshot's inode joined with its source's).
    const FileEntry& now = files_[i].entry;
    if (now.hashed && now.error.empty() &&
        (before == before_.end() || !before->second.hashed ||
         !FileIdentity::Of(now).UnchangedFrom(FileIdentity::Of(before->second))))
      changed_files_.emplace_back(now.fs, now.ino);
    KeepWrite(Add(std::move(files_[i].entry)));
  });
  changes_ += before_.size() - matched;  // previous records of inodes gone or not recorded now
  stats_->bytes_read = bytes_read_.load();
  stats_->checksums = checksums_.counts();
  return {};
}

bool FollowState::HashFile(ChangedFile* f) {
  FileEntry& e = f->entry;
  FileAt at(f->root->id.uuid + "/" + std::to_string(f->root->id.subvolume), true);
  at.mapped = f->mapped;
  auto before = before_.find({f->root->fs, f->ino});
  if (f->mapped && before != before_.end() && before->second.hashed && Settled(before->second) &&
      FileIdentity::Of(e).HashesStillValid(FileIdentity::Of(before->second))) {
    at.same_data = &before->second;
    f->same_extents = false;  // counted as the same inode's
  } else if (f->mapped && f->same_extents) {
    at.same_data = f->keys.get();
  }
  if (at.same_data) return builder_.Build(at, &e) == Built::kDone;
  if (f->from_items) {  // inline data or btrfs checksums, unopened, as a walk keys it
    at.dirfd = f->root->fd;
    TreeMap again;  // the inline data, kept by no search so far
    const auto& x = e.extents;
    if (x.size() == 1 && (x[0].flags & kExtentInline) && !(x[0].flags & kExtentEncoded)) {
      auto found = MapFromTree(sys_, f->root->fd, f->ino, &again);
      if (found.ok() && *found && again.inode.transid == f->item->map.inode.transid) at.inline_data = again.inline_data;
    }
    const Built built = builder_.Build(at, &e);
    if (built != Built::kOpenIt) return built == Built::kDone;
    MapOpened(f);  // opened, it is mapped again, as any file opened
    if (!f->present) return false;
    at.mapped = f->mapped;
    at.dirfd = -1;
    at.inline_data = {};
  }
  if (o_.stop && o_.stop->load()) return false;
  auto fd = Own(sys_, sys_.OpenNoFollow(f->paths[0]));
  if (!fd.ok()) return false;
  at.fd = fd->get();
  const Built built = builder_.Build(at, &e);
  return built != Built::kStopped;
}

Status FollowState::Add(FileEntry e) {
  CountRecord(e, stats_, observer_);
  stats_->hardlinks += e.other_paths.size();
  return file_writer_->Add(std::move(e));
}

Status FollowState::WriteInto(IndexHeader header, OutputFile* out) {
  const KeepFreedTop keep;  // the spools' frames copied
  OANS_RETURN_IF_ERROR(write_status_);
  OANS_RETURN_IF_ERROR(dir_writer_->Flush());
  struct stat dirs;
  if (fstat(dir_spool_->fd(), &dirs) != 0) return Status::Io("reading the scan's temporary spool", errno);
  // A long list would make the header itself long; the plan then joins the two indexes.
  header.changed_known = changed_files_.size() <= kMaxChangedListed;
  if (header.changed_known) {
    std::sort(changed_files_.begin(), changed_files_.end());
    header.changed_files = std::move(changed_files_);
    header.changed_at = uint64_t(dirs.st_size) + changed_at_;
  }
  IndexWriter w(out);
  OANS_RETURN_IF_ERROR(w.WriteHeader(header));
  OANS_RETURN_IF_ERROR(w.AppendFrames(*dir_spool_, dir_writer_->totals()));
  OANS_RETURN_IF_ERROR(file_writer_->Flush());
  OANS_RETURN_IF_ERROR(w.AppendFrames(*file_spool_, file_writer_->totals()));
  if (o_.stop && o_.stop->load()) return w.Flush();
  return w.Finish();
}

}  // namespace oans
