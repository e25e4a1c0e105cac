#include "lib/scan/follow_state.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "lib/base/heap.h"
#include "lib/scan/entry.h"
#include "lib/scan/previous.h"
#include "lib/scan/quiet.h"
#include "lib/scan/walk.h"

namespace oans {

void ChangedDir::SetEntries(std::vector<std::pair<std::string, uint64_t>> found) {
  auto& e = entries = std::move(found);
  std::stable_sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (i + 1 < e.size() && e[i + 1].first == e[i].first) continue;  // a later one follows
    if (kept != i) e[kept] = std::move(e[i]);
    ++kept;
  }
  e.resize(kept);
}

std::optional<std::string> UnderRoot(const FollowRoot& r, const std::string& rel) {
  if (r.rel.empty()) return rel.empty() ? r.path : PathJoin(r.path, rel);
  if (rel == r.rel) return r.path;
  if (rel.size() > r.rel.size() && rel.compare(0, r.rel.size(), r.rel) == 0 && rel[r.rel.size()] == '/')
    return PathJoin(r.path, rel.substr(r.rel.size() + 1));
  return std::nullopt;
}

FollowState::~FollowState() {
  for (auto& r : roots)
    if (r.fd >= 0) sys_.Close(r.fd);
}

bool FollowState::Excluded(const FollowRoot& r, const std::string& path) const {
  if (o_.excludes.empty() || path.size() <= r.top.size()) return false;
  const std::vector<std::string> excludes = ExcludesForRoot(o_.excludes, r.top);
  // Each component below the root, as the walk matches it before reading further.
  for (size_t pos = r.top == "/" ? 1 : r.top.size() + 1;;) {
    const size_t slash = path.find('/', pos);
    if (PathExcluded(excludes, path.substr(0, slash), path.substr(pos, slash - pos))) return true;
    if (slash == std::string::npos) return false;
    pos = slash + 1;
  }
}

FollowWhy FollowState::FindChanges(const IndexHeader& prev) {
  prev_began_ns_ = prev.created_ns;
  auto d = TempFile::Create(TempDirectory(o_.temp_dir));
  auto f = TempFile::Create(TempDirectory(o_.temp_dir));
  if (!d.ok() || !f.ok())
    return {NoFollow::kTempFile, "no temporary file (" + (d.ok() ? f.status() : d.status()).message() + ")"};
  dir_spool_ = std::move(*d);
  file_spool_ = std::move(*f);
  dir_writer_ = std::make_unique<IndexWriter>(dir_spool_->fd(), "the scan's temporary spool");
  file_writer_ = std::make_unique<IndexWriter>(file_spool_->fd(), "the scan's temporary spool");
  // A first look: few inodes are read whole at less cost than the previous index.
  std::vector<std::vector<uint64_t>> numbers(roots.size());
  std::vector<bool> many(roots.size());
  FollowWhy why = FindNumbers(&numbers, &many);
  const bool any_many = std::find(many.begin(), many.end(), true) != many.end();
  if (why.empty() && any_many) why = JudgeInPasses(prev, many);
  for (size_t i = 0; i < roots.size() && why.empty(); ++i)
    if (!many[i]) why = ReadRootChanges(roots[i], numbers[i]);
  numbers.clear();
  for (size_t i = 0; i < roots.size() && why.empty(); ++i) why = FinishRootChanges(roots[i]);
  if (!why.empty()) return why;
  stats_->leaves_read = leaves_stats_.leaves;
  stats_->leaves_read_bytes = leaves_stats_.bytes;
  stats_->leaves_read_requests = leaves_stats_.requests;
  stats_->leaves_searched = leaves_stats_.searched;
  if (quiet_) {
    quiet_->Done();
    stats_->extents_moved = quiet_->moved();
    ReturnFreedMemory();  // the digests
  }
  return {};
}

FollowWhy FollowState::ReadRootChanges(FollowRoot& r, const std::vector<uint64_t>& numbers) {
  r.changes.found = numbers.size();
  Status s = ReadChangedInodes(sys_, r.fd, numbers, nullptr, kMaxFollowedInodes, &r.changes, search_threads);
  if (!s.ok()) return {NoFollow::kSearch, r.path + ": " + s.message()};
  return {};
}

FollowWhy FollowState::JudgeInPasses(const IndexHeader& prev, const std::vector<bool>& judged) {
  quiet_ = std::make_unique<QuietRecords>();
  // Only the records of the roots judged: a snapshot unchanged since costs no pass.
  for (size_t i = 0; i < roots.size(); ++i)
    if (judged[i] && roots[i].fs < prev.filesystems.size()) quiet_->Want(roots[i].fs);  // not a new snapshot's
  // The digests and the moved files' extents in a sixteenth of --memory: as many passes
  // as that takes, each over the inode numbers whose records it holds.
  for (uint64_t from = 0;;) {
    uint64_t upto = UINT64_MAX;
    Status s;
    {
      const KeepFreedTop keep;  // the previous index's frames read (not the judges' heaps)
      s = quiet_->Load(o_.previous, prev.created_ns, quiet_->PassRoom(o_.memory / 16), from, &upto);
    }
    if (!s.ok()) return {NoFollow::kDamagedIndex, "the previous index cannot be read again: " + s.message()};
    stats_->judge_passes++;
    for (size_t i = 0; i < roots.size(); ++i) {
      if (!judged[i]) continue;
      FollowWhy why = JudgeRootChanges(roots[i], from, upto);
      if (!why.empty()) return why;
    }
    if (upto == UINT64_MAX) return {};
    from = upto;
    ReturnFreedMemory();  // what judging the pass took and freed
  }
}

// On an SSD (read_leaves) the judge reads the blocks written since from the device
// itself. Else, or where it cannot, where the blocks did not all fit the read-ahead's
// budget, the numbers are judged part by part, each part's blocks read ahead first
// (read_ahead_from): the search then finds them in memory instead of reading them one
// by one, in key order.
FollowWhy FollowState::JudgeRootChanges(FollowRoot& r, uint64_t from, uint64_t upto) {
  if (read_leaves && !r.leaves_by_search) {
    auto leaves = ChangedLeaves::Lay(sys_, r.fd, r.since, from, upto - 1, &leaves_stats_);
    if (leaves.ok()) return JudgeRange(r, from, upto, true, leaves->get());
    observer_->Notice("warning: " + r.path + ": btrfs tree blocks searched, not read from the device: " +
                      leaves.status().message());
    r.leaves_by_search = true;
    r.read_ahead_cut = true;  // read ahead part by part instead
  }
  for (uint64_t lo = from; lo < upto;) {
    PartAhead part{upto, false};
    if (r.read_ahead_below > lo) part = {std::min(upto, r.read_ahead_below), true};
    else if (r.read_ahead_cut && read_ahead_from) part = read_ahead_from(r, lo, upto);
    if (o_.stop && o_.stop->load()) return {NoFollow::kStopped, "the scan was stopped"};
    FollowWhy why = JudgeRange(r, lo, part.end, part.in_memory);
    if (!why.empty()) return why;
    lo = part.end;
  }
  return {};
}

FollowWhy FollowState::JudgeRange(FollowRoot& r, uint64_t from, uint64_t upto, bool in_memory,
                                  const ChangedLeaves* leaves) {
  QuietInode take = [this, &r](ChangedInode& c) { return quiet_->Take(r.fs, c); };
  size_t judges = judge_in_memory_only && !in_memory ? 1 : judge_threads;
  // Judges reading the leaves from the device wait on it half the time or more: as many
  // as the searches made at once, when those are more than the processors. Not when the
  // records take several passes: memory is short, and each judge holds its window.
  const bool one_pass = from == 0 && upto == UINT64_MAX;  // the leaves are read a pass at a time
  if (leaves && one_pass) judges = std::max(judges, search_threads);
  // Both add to r.changes (a later pass's inodes have higher numbers: in inode order
  // still). The judge's limit counts what it keeps, the reading's all that is kept.
  const size_t held = r.changes.inodes.size();
  std::vector<uint64_t> rest;
  Status s = JudgeChangedInodes(sys_, r.fd, r.since, take, kMaxFollowedInodes - held, &rest, &r.changes,
                                quiet_->Splits(r.fs, judges, from, upto), from, upto - 1, o_.stop, leaves);
  if (s.code() == Status::Code::kInterrupted) return {NoFollow::kStopped, "the scan was stopped"};
  // The blocks between them were read from the device (leaves), not into memory: each
  // run of consecutive numbers its own search.
  if (s.ok() && !r.changes.too_many)
    s = ReadChangedInodes(sys_, r.fd, rest, take, kMaxFollowedInodes, &r.changes, search_threads,
                          leaves ? 1 : kInodeGap);
  if (!s.ok()) return {NoFollow::kSearch, r.path + ": " + s.message()};
  return TooMany(r);
}

FollowWhy FollowState::TooMany(const FollowRoot& r) const {
  if (!r.changes.too_many) return {};
  return {NoFollow::kTooManyChanges, "btrfs reports more than " + std::to_string(kMaxFollowedInodes) +
                                         " changed inodes below " + r.path + " (a walk costs no more)"};
}

FollowWhy FollowState::FinishRootChanges(FollowRoot& r) {
  if (FollowWhy why = TooMany(r); !why.empty()) return why;
  for (const auto& c : r.changes.inodes) r.changed[c.ino] = &c;
  stats_->changed_inodes += r.changes.found;
  stats_->quiet_inodes += r.changes.quiet;
  FollowWhy linked = LinkDirs(r);
  if (!linked.empty()) return linked;
  for (auto& c : r.changes.inodes) {
    if (!c.exists || !S_ISDIR(c.item.mode)) continue;
    FollowWhy why = ReadChangedDir(r, c);
    if (!why.empty()) return why;
  }
  std::string found = std::to_string(r.changes.found) + " inode(s) in tree blocks written since";
  if (r.changes.quiet) found += ", " + std::to_string(r.changes.quiet) + " of them unchanged or only moved";
  if (stats_->judge_passes > 1)
    found += " (judged in " + std::to_string(stats_->judge_passes) + " passes over the previous index: --memory)";
  observer_->Notice("following btrfs changes in " + r.path + " since generation " + std::to_string(r.since - 1) +
                    ": " + found);
  return {};
}

FollowWhy FollowState::FindNumbers(std::vector<std::vector<uint64_t>>* numbers, std::vector<bool>* many) {
  for (size_t i = 0; i < roots.size(); ++i) {
    FollowRoot& r = roots[i];
    bool over = false;
    Status s = ChangedInodeNumbers(sys_, r.fd, r.since, kJudgeQuietFrom, &(*numbers)[i], &over, &r.changes.searches);
    if (!s.ok()) return {NoFollow::kSearch, r.path + ": " + s.message()};
    (*many)[i] = over;
    if (over) std::vector<uint64_t>().swap((*numbers)[i]);
  }
  return {};
}

FollowWhy FollowState::LinkDirs(FollowRoot& r) {
  std::set<uint64_t> wanted;  // directories whose links are not known yet
  auto want = [&](uint64_t dir) {
    if (dir != kBtrfsFirstInode && !r.dir_links.count(dir)) wanted.insert(dir);
  };
  for (const auto& c : r.changes.inodes)
    if (c.exists && S_ISDIR(c.item.mode) && c.links.size() == 1) r.dir_links[c.ino] = {c.links[0].first, c.links[0].second};
  for (const auto& c : r.changes.inodes)
    if (c.exists)
      for (const auto& link : c.links) want(link.first);
  for (int level = 0; !wanted.empty() && level < 4096; ++level) {
    const std::vector<uint64_t> inos(wanted.begin(), wanted.end());
    wanted.clear();
    Status s = ReadDirLinks(sys_, r.fd, inos, &r.dir_links, &r.changes.searches);
    if (!s.ok()) return {NoFollow::kSearch, r.path + ": " + s.message()};
    for (uint64_t ino : inos) {
      auto it = r.dir_links.find(ino);
      if (it != r.dir_links.end()) want(it->second.parent);  // else: looked up on its own
    }
  }
  return {};
}

// A changed directory's entries come from its items (DIR_INDEX), its path from its
// link and its parent's: nothing is opened or read. Its names move, not copied: after
// a backup every directory is here.
FollowWhy FollowState::ReadChangedDir(FollowRoot& r, ChangedInode& c) {
  FollowWhy why;
  auto rel = RelPath(r, c.ino, &why);
  if (!rel) return why;
  auto abs = UnderRoot(r, *rel);
  dir_paths_[{r.fs, c.ino}] = abs && !Excluded(r, *abs) ? abs : std::nullopt;
  if (!abs || Excluded(r, *abs)) return {};  // outside the root or excluded now: as if removed
  ChangedDir d;
  d.path = *abs;
  d.mtime_ns = c.item.mtime_ns;
  d.ctime_ns = c.item.ctime_ns;
  d.SetEntries(std::move(c.entries));
  dirs_[{r.fs, c.ino}] = std::move(d);
  return {};
}

std::optional<std::string> FollowState::RelPath(FollowRoot& r, uint64_t dir_ino, FollowWhy* why, int depth) {
  if (dir_ino == kBtrfsFirstInode) return std::string();
  auto known = rel_paths_.find({r.fs, dir_ino});
  if (known != rel_paths_.end()) return known->second;
  std::optional<std::string> rel;
  // Built from the links of the directories above it, without a lookup.
  auto link = r.dir_links.find(dir_ino);
  if (link != r.dir_links.end() && depth < 4096) {
    auto up = RelPath(r, link->second.parent, why, depth + 1);
    if (!up) return std::nullopt;
    rel = up->empty() ? link->second.name : PathJoin(*up, link->second.name);
    // As long as a lookup could answer (BTRFS_INO_LOOKUP_PATH_MAX): longer ones walk.
    if (rel->size() > 4080) {
      *why = {NoFollow::kDirectory, "directory inode " + std::to_string(dir_ino) + " of " + r.path +
                                        ": its path is too long to follow (" + std::strerror(ENAMETOOLONG) + ")"};
      return std::nullopt;
    }
  }
  if (!rel) {
    auto p = sys_.DirectoryPath(r.fd, 0, dir_ino);
    if (!p.ok()) {  // a path too long for the lookup, or a directory gone since the search
      *why = {NoFollow::kDirectory,
              "directory inode " + std::to_string(dir_ino) + " of " + r.path + ": " + p.status().message()};
      return std::nullopt;
    }
    rel = *p;
  }
  rel_paths_[{r.fs, dir_ino}] = *rel;
  return rel;
}

std::optional<std::string> FollowState::PathOf(FollowRoot& r, uint64_t dir_ino, const std::string& name,
                                               FollowWhy* why) {
  auto it = dir_paths_.find({r.fs, dir_ino});
  if (it == dir_paths_.end()) {
    auto rel = RelPath(r, dir_ino, why);
    if (!rel) return std::nullopt;
    std::optional<std::string> abs = UnderRoot(r, *rel);
    if (abs && Excluded(r, *abs)) abs.reset();
    it = dir_paths_.emplace(std::make_pair(r.fs, dir_ino), abs).first;
  }
  if (!it->second) return std::nullopt;
  return PathJoin(*it->second, name);
}

}  // namespace oans
