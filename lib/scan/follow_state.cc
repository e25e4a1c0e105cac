#include "lib/scan/follow_state.h"

#include <sys/stat.h>

#include <algorithm>

#include "lib/scan/entry.h"
#include "lib/scan/previous.h"
#include "lib/scan/walk.h"

namespace oans {
namespace {

// The absolute path of subvolume-relative `rel`, or nullopt when it is not below root r.
std::optional<std::string> UnderRoot(const FollowRoot& r, const std::string& rel) {
  if (r.rel.empty()) return rel.empty() ? r.path : PathJoin(r.path, rel);
  if (rel == r.rel) return r.path;
  if (rel.size() > r.rel.size() && rel.compare(0, r.rel.size(), r.rel) == 0 && rel[r.rel.size()] == '/')
    return PathJoin(r.path, rel.substr(r.rel.size() + 1));
  return std::nullopt;
}

}  // namespace

FollowState::~FollowState() {
  for (auto& r : roots)
    if (r.fd >= 0) sys_.Close(r.fd);
}

bool FollowState::Excluded(const FollowRoot& r, const std::string& path) const {
  if (o_.excludes.empty() || path.size() <= r.path.size()) return false;
  const std::vector<std::string> excludes = ExcludesForRoot(o_.excludes, r.path);
  // Each component below the root, as the walk matches it before reading further.
  for (size_t pos = r.path == "/" ? 1 : r.path.size() + 1;;) {
    const size_t slash = path.find('/', pos);
    if (PathExcluded(excludes, path.substr(0, slash), path.substr(pos, slash - pos))) return true;
    if (slash == std::string::npos) return false;
    pos = slash + 1;
  }
}

std::string FollowState::FindChanges() {
  auto d = TempFile::Create(TempDirectory(o_.temp_dir));
  auto f = TempFile::Create(TempDirectory(o_.temp_dir));
  if (!d.ok() || !f.ok()) return "no temporary file (" + (d.ok() ? f.status() : d.status()).message() + ")";
  dir_spool_ = std::move(*d);
  file_spool_ = std::move(*f);
  dir_writer_ = std::make_unique<IndexWriter>(dir_spool_->fd(), "the scan's temporary spool");
  file_writer_ = std::make_unique<IndexWriter>(file_spool_->fd(), "the scan's temporary spool");
  for (auto& r : roots) {
    Status s = FindSubvolumeChanges(sys_, r.fd, r.since, &r.changes);
    if (!s.ok()) return r.path + ": " + s.message();
    if (r.changes.subvolume_entry) return "a subvolume below " + r.path + " was created, removed or snapshotted";
    if (r.changes.too_many)
      return "btrfs reports more than " + std::to_string(kMaxFollowedInodes) + " changed inodes below " + r.path +
             " (a walk costs no more)";
    for (const auto& c : r.changes.inodes) r.changed[c.ino] = &c;
    stats_->changed_inodes += r.changes.inodes.size();
    for (const auto& c : r.changes.inodes) {
      if (!c.exists || !S_ISDIR(c.item.mode)) continue;
      std::string why = ReadChangedDir(r, c);
      if (!why.empty()) return why;
    }
    observer_->Notice("following btrfs changes in " + r.path + " since generation " + std::to_string(r.since - 1) +
                      ": " + std::to_string(r.changes.inodes.size()) + " inode(s) in tree blocks written since");
  }
  return "";
}

std::string FollowState::ReadChangedDir(FollowRoot& r, const ChangedInode& c) {
  std::string rel;
  if (c.ino != kBtrfsFirstInode) {
    auto p = sys_.DirectoryPath(r.fd, 0, c.ino);
    if (!p.ok()) return "directory inode " + std::to_string(c.ino) + " of " + r.path + ": " + p.status().message();
    rel = *p;
  }
  auto abs = UnderRoot(r, rel);
  dir_paths_[{r.fs, c.ino}] = abs && !Excluded(r, *abs) ? abs : std::nullopt;
  if (!abs || Excluded(r, *abs)) return "";  // outside the root or excluded now: as if removed
  auto fd = sys_.OpenDirNoFollow(*abs);
  if (!fd.ok()) return *abs + ": " + fd.status().message();
  ChangedDir d;
  d.path = *abs;
  std::string why;
  auto st = sys_.Fstat(*fd);
  if (!st.ok() || st->ino != c.ino || st->dev != r.dev) why = *abs + " was replaced while it was read";
  std::vector<DirEntry> batch;
  while (why.empty()) {
    auto more = sys_.ReadDir(*fd, &batch);
    if (!more.ok()) why = "reading directory " + *abs + ": " + more.status().message();
    if (!more.ok() || !*more) break;
    for (const auto& e : batch)
      if (e.name != "." && e.name != "..") d.entries[e.name] = e.ino;
  }
  sys_.Close(*fd);
  if (why.empty()) dirs_[{r.fs, c.ino}] = std::move(d);
  return why;
}

std::optional<std::string> FollowState::PathOf(FollowRoot& r, uint64_t dir_ino, const std::string& name,
                                               std::string* why) {
  auto it = dir_paths_.find({r.fs, dir_ino});
  if (it == dir_paths_.end()) {
    std::optional<std::string> abs;
    auto rel = dir_ino == kBtrfsFirstInode ? Result<std::string>(std::string()) : sys_.DirectoryPath(r.fd, 0, dir_ino);
    if (!rel.ok()) {  // a path too long for the lookup, or a directory gone since the search
      *why = "directory inode " + std::to_string(dir_ino) + " of " + r.path + ": " + rel.status().message();
      return std::nullopt;
    }
    abs = UnderRoot(r, *rel);
    if (abs && Excluded(r, *abs)) abs.reset();
    it = dir_paths_.emplace(std::make_pair(r.fs, dir_ino), abs).first;
  }
  if (!it->second) return std::nullopt;
  return PathJoin(*it->second, name);
}

}  // namespace oans
