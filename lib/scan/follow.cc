#include "lib/scan/follow.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "lib/base/heap.h"
#include "lib/base/paths.h"
#include "lib/base/spill.h"
#include "lib/base/storage.h"
#include "lib/btrfs/changes.h"
#include "lib/btrfs/subvolumes.h"
#include "lib/btrfs/tree_ahead.h"
#include "lib/scan/follow_state.h"

namespace oans {
namespace {

// Why the previous index's header cannot be followed from, or nothing.
FollowWhy HeaderMismatch(const ScanOptions& o, const IndexHeader& start, const IndexHeader& prev) {
  if (!prev.directories)
    return {NoFollow::kOldIndex, "the previous index does not record directories (made by an older oans)"};
  if (!prev.owners) return {NoFollow::kOldIndex, "the previous index does not record owners (made by an older oans)"};
  if (prev.roots != start.roots) return {NoFollow::kOtherScan, "the previous index was made for other roots"};
  if (prev.block_size != start.block_size || prev.min_size != start.min_size || prev.excludes != start.excludes)
    return {NoFollow::kOtherScan, "the previous index was made with another --block-size, --min-size or --exclude"};
  if (o.refresh_extents) return {NoFollow::kRefreshExtents, "--refresh-extents asks for every file to be mapped again"};
  if (prev.read_data != start.read_data)
    return {NoFollow::kOtherScan, std::string("the previous index's keys were made ") +
                                      (prev.read_data ? "from file data" : "from btrfs checksums")};
  if (start.mounts_below) return {NoFollow::kMounts, "a filesystem is mounted below a root, and btrfs records no mounts"};
  if (prev.mounts_below)
    return {NoFollow::kMounts, "a filesystem was mounted below a root when the previous index was made"};
  return {};
}

// Whether the previous index's filesystem `was` is the subvolume open as r now: the
// same subvolume (not another under its id), at a generation no older than recorded.
FollowWhy SameSubvolume(const FsRecord& was, FollowRoot* r) {
  if (was.subvolume_uuid != r->id.subvolume_uuid)
    return {NoFollow::kSubvolume, r->path + ": another subvolume now has its id"};
  if (was.generation == 0 || was.generation > r->id.generation)
    return {NoFollow::kGeneration, r->path + ": the previous index's generation is unknown or newer than the filesystem's"};
  r->since = was.generation + 1;
  return {};
}

// Whether a header's filesystem is a subvolume deleted before (written as GoneFs left it).
bool IsGone(const FsRecord& was) { return was.type == "btrfs" && was.generation == 0 && was.subvolume_uuid.empty(); }

// A deleted subvolume's entry in the new header: it keeps its place (records name their
// filesystem by place), but matches no subvolume and holds no record.
void MarkGone(FsRecord* was) {
  was->generation = 0;
  was->subvolume_uuid.clear();
}

// The previous index's filesystem that is subvolume `id` of filesystem `uuid`, or -1.
int FindFs(const IndexHeader& prev, const std::string& uuid, uint64_t id) {
  for (uint32_t k = 0; k < prev.filesystems.size(); ++k)
    if (prev.filesystems[k].uuid == uuid && prev.filesystems[k].subvolume == id) return int(k);
  return -1;
}

// Takes the previous index's filesystem `found` for r: once, and only the same subvolume.
FollowWhy MatchFs(const IndexHeader& prev, int found, std::vector<bool>* matched, FollowRoot* r) {
  if ((*matched)[found]) return {NoFollow::kSubvolume, "two roots lie in one subvolume"};
  FollowWhy why = SameSubvolume(prev.filesystems[found], r);
  if (!why.empty()) return why;
  (*matched)[found] = true;
  r->fs = uint32_t(found);
  return {};
}

// Opens `path` as a followed root: a btrfs directory, identified.
FollowWhy OpenRoot(Sys& sys, const std::string& path, FollowState* f, FollowRoot** out) {
  FollowRoot r;
  r.path = path;
  auto fd = sys.OpenDirNoFollow(path);
  if (!fd.ok()) return {NoFollow::kRoot, path + ": " + fd.status().message()};
  r.fd = *fd;
  f->roots.push_back(r);  // closed by FollowState
  FollowRoot& root = f->roots.back();
  auto st = sys.Fstat(root.fd);
  auto id = sys.Identify(root.fd);
  if (!st.ok() || !id.ok()) return {NoFollow::kRoot, path + ": cannot identify its filesystem"};
  if (id->type != "btrfs" || id->subvolume_uuid.empty() || id->generation == 0)
    return {NoFollow::kNotBtrfs, path + " is not on btrfs"};
  root.dev = st->dev;
  root.id = *id;
  root.top = path;
  if (st->ino != kBtrfsFirstInode) {
    auto rel = sys.DirectoryPath(root.fd, 0, st->ino);
    if (!rel.ok()) return {NoFollow::kRoot, path + ": " + rel.status().message()};
    root.rel = *rel;
  }
  *out = &root;
  return {};
}

// Opens and identifies each root and matches it with the previous index's subvolume.
FollowWhy OpenRoots(Sys& sys, const IndexHeader& prev, std::vector<bool>* matched, FollowState* f) {
  for (const auto& path : prev.roots) {
    FollowRoot* root = nullptr;
    FollowWhy why = OpenRoot(sys, path, f, &root);
    if (!why.empty()) return why;
    const int found = FindFs(prev, root->id.uuid, root->id.subvolume);
    if (found < 0) return {NoFollow::kSubvolume, path + ": its subvolume is not the one the previous index knew"};
    why = MatchFs(prev, found, matched, root);
    if (!why.empty()) return why;
  }
  return {};
}

// A subvolume created since the previous index, open as r: when it is a snapshot, taken
// since, of a subvolume that index holds, its records are its source's, carried to it
// (FollowClone) and followed from the source's generation. Otherwise it is walked.
FollowWhy OpenSnapshot(const IndexHeader& prev, const ScanOptions& o, FollowRoot* r, FollowState* f) {
  auto walk = [r](const std::string& more) {
    return FollowWhy{NoFollow::kSubvolumeChanged, "subvolume " + r->path + " was created since the previous index" + more};
  };
  if (r->id.parent_uuid.empty()) return walk("");
  int from = -1;
  for (uint32_t k = 0; k < prev.filesystems.size(); ++k)
    if (prev.filesystems[k].uuid == r->id.uuid && prev.filesystems[k].subvolume_uuid == r->id.parent_uuid) from = int(k);
  if (from < 0) return walk(", a snapshot of a subvolume it does not hold");
  const FsRecord& was = prev.filesystems[from];
  // Its tree's blocks older than that generation are then its source's, as recorded.
  if (was.generation == 0 || r->id.created <= was.generation) return walk(", a snapshot of an older state of its source");
  if (!o.excludes.empty()) return walk("; --exclude may leave out other files of it than of its source");
  r->since = was.generation + 1;
  r->fs = uint32_t(prev.filesystems.size() + f->clones.size());
  f->clones.push_back({uint32_t(from), r->fs, f->roots.size() - 1, "", r->path});
  return {};
}

// Each snapshot's source: followed whole (its top a root) and holding no other root,
// whose place in the snapshot would be an empty directory.
FollowWhy FindSources(FollowState* f) {
  for (auto& c : f->clones) {
    const FollowRoot* from = nullptr;
    for (const auto& r : f->roots)
      if (r.fs == c.from_fs) from = &r;
    const std::string& to = f->roots[c.root].path;
    if (!from || !from->rel.empty())
      return {NoFollow::kSubvolumeChanged, "snapshot " + to + " was created since the previous index, of a subvolume not followed whole"};
    for (const auto& r : f->roots)
      if (&r != from && r.path != to && PathWithin(r.path, from->path))
        return {NoFollow::kSubvolumeChanged, "snapshot " + to + " was created since the previous index, of a subvolume holding " + r.path};
    c.from_path = from->path;
  }
  return {};
}

// Opens one subvolume below a root (at `path`, id `id`) as a followed root of its own.
FollowWhy OpenNested(Sys& sys, const IndexHeader& prev, const ScanOptions& o, const NestedSubvolume& sub,
                     std::vector<bool>* matched, FollowState* f) {
  FollowRoot* r = nullptr;
  FollowWhy why = OpenRoot(sys, sub.rel, f, &r);  // sub.rel: its absolute path here
  if (!why.empty()) return why;
  if (r->id.subvolume != sub.id || !r->rel.empty())
    return {NoFollow::kSubvolumeChanged, sub.rel + ": the subvolume there changed while it was looked at"};
  const int found = FindFs(prev, r->id.uuid, sub.id);
  if (found < 0) return OpenSnapshot(prev, o, r, f);
  return MatchFs(prev, found, matched, r);
}

// The subvolumes below each root (not excluded), each followed as a root of its own;
// the previous index's subvolumes no longer there are gone.
FollowWhy OpenSubvolumes(Sys& sys, const IndexHeader& prev, const ScanOptions& o, std::vector<bool>* matched,
                         FollowState* f) {
  const size_t n = f->roots.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<NestedSubvolume> below;
    uint64_t searches = 0;
    const FollowRoot root = f->roots[i];  // a copy: roots grows below
    auto under_root = [&root](const std::string& rel) { return UnderRoot(root, rel).has_value(); };
    Status s = SubvolumesBelow(sys, root.fd, root.id.subvolume, under_root, &below, &searches);
    if (!s.ok()) return {NoFollow::kSearch, root.path + ": listing the subvolumes below it: " + s.message()};
    for (auto& sub : below) {
      auto abs = UnderRoot(root, sub.rel);
      const bool a_root = abs && std::find(prev.roots.begin(), prev.roots.end(), *abs) != prev.roots.end();
      if (!abs || a_root || f->Excluded(root, *abs)) continue;
      sub.rel = *abs;
      const size_t first = f->roots.size();
      FollowWhy why = OpenNested(sys, prev, o, sub, matched, f);
      if (!why.empty()) return why;
      f->roots[first].top = root.top;
    }
  }
  std::set<std::string> filesystems;
  for (const auto& r : f->roots) filesystems.insert(r.id.uuid);
  for (uint32_t k = 0; k < matched->size(); ++k) {
    const FsRecord& was = prev.filesystems[k];
    if ((*matched)[k] || IsGone(was)) continue;
    // Only a subvolume of a root's filesystem can have been deleted below it.
    if (was.type != "btrfs" || !filesystems.count(was.uuid))
      return {NoFollow::kSubvolume, "the previous index holds a filesystem no root lies in"};
    f->gone.push_back(k);
  }
  return FindSources(f);
}

// Tree reads in flight at once: on an SSD, --io-threads sets how many, these too (up to
// 32); a spinning disk keeps its one sweep in disk order.
int TreeReaders(const ScanOptions& o, const StoragePolicy& policy) {
  return o.io_threads > 0 && policy.tree_readers > 1 ? std::min(o.io_threads, 32) : policy.tree_readers;
}

// Reading root r's blocks written since ahead (tree_ahead.h).
TreeAheadJob ChangesJob(const ScanOptions& o, const StoragePolicy& policy, const FollowRoot& r) {
  return {TreesFor::kChanges, o.memory, [&o] { return o.stop && o.stop->load(); }, r.since,
          TreeReaders(o, policy), policy.tree_ahead_least};
}

// On a spinning disk the subvolumes' tree blocks written since are read first
// (lib/btrfs/tree_ahead.h), leaf by leaf in the order of their places on disk, before the
// change search, which then finds them in memory instead of sending the head across the
// metadata in key order. (On an SSD the judge reads them from the device itself, or,
// where it cannot, reads them ahead part by part, many at once: ReadChangesAheadFrom.)
void ReadChangesAhead(Sys& sys, const ScanOptions& o, std::vector<FollowRoot>& roots, const StoragePolicy& policy,
                      Observer* observer, ScanStats* stats) {
  TreeAheadStats ahead;
  for (auto& r : roots) {
    Status s = ReadTreesAhead(sys, r.fd, ChangesJob(o, policy, r), &ahead);
    r.read_ahead_cut = s.ok() && ahead.cut;  // or the roots before spent the budget
    r.read_ahead_below = !s.ok() ? 0 : ahead.whole ? ~uint64_t(0) : ahead.inodes_below;
    if (!s.ok()) observer->Notice("warning: " + r.path + ": btrfs tree blocks not read ahead: " + s.message());
  }
  stats->tree_ahead_bytes = ahead.bytes;
  stats->tree_ahead_leaves = ahead.leaves;
  stats->tree_ahead_cut = ahead.cut_short;
  ReturnFreedMemory();  // the lists of leaves, the readers' buffers
}

// The same for root r's inodes numbered `from` to `upto` - 1 alone, the whole budget
// theirs (FollowState::read_ahead_from): the judge reads ahead part by part what did
// not fit at first.
PartAhead ReadChangesAheadFrom(Sys& sys, const ScanOptions& o, FollowRoot& r, uint64_t from, uint64_t upto,
                               const StoragePolicy& policy, Observer* observer, ScanStats* stats) {
  TreeAheadJob job = ChangesJob(o, policy, r);
  job.first_inode = from;
  job.end_inode = upto;
  TreeAheadStats ahead;
  Status s = ReadTreesAhead(sys, r.fd, job, &ahead);
  if (!s.ok()) {  // said once: the rest is judged as it is read
    observer->Notice("warning: " + r.path + ": btrfs tree blocks not read ahead: " + s.message());
    r.read_ahead_cut = false;
    return {upto, false};
  }
  ReturnFreedMemory();
  stats->tree_ahead_bytes += ahead.bytes;
  stats->tree_ahead_leaves += ahead.leaves;
  if (!ahead.on_disk) r.read_ahead_cut = false;  // cannot be laid out: no more tries
  // None written since, too few to be worth it, not laid out, or stopped: the rest is
  // judged as it is read.
  if (ahead.leaves == 0) return {upto, false};
  stats->tree_ahead_parts++;
  // One inode's blocks alone past the budget: the part is that inode, read as it is met.
  if (ahead.inodes_below == from) return {from + 1, false};
  return {ahead.inodes_below, true};
}

}  // namespace

const char* NoFollowName(NoFollow k) {
  switch (k) {
    case NoFollow::kNone: return "";
    case NoFollow::kOldIndex: return "old_index";
    case NoFollow::kOtherScan: return "other_scan";
    case NoFollow::kRefreshExtents: return "refresh_extents";
    case NoFollow::kMounts: return "mounts";
    case NoFollow::kRoot: return "root";
    case NoFollow::kNotBtrfs: return "not_btrfs";
    case NoFollow::kSubvolume: return "subvolume";
    case NoFollow::kGeneration: return "generation";
    case NoFollow::kCommit: return "commit";
    case NoFollow::kTempFile: return "temp_file";
    case NoFollow::kSearch: return "search";
    case NoFollow::kSubvolumeChanged: return "subvolume_changed";
    case NoFollow::kTooManyChanges: return "too_many_changes";
    case NoFollow::kDirectory: return "directory";
    case NoFollow::kMovedIn: return "moved_in";
    case NoFollow::kDamagedIndex: return "damaged_index";
    case NoFollow::kStopped: return "stopped";
    case NoFollow::kUnreadRecord: return "unread_record";
  }
  return "";
}

bool MountedBelow(Sys& sys, const std::vector<std::string>& roots) {
  auto mounts = sys.MountPoints();
  if (!mounts.ok()) return true;
  for (const auto& m : *mounts)
    for (const auto& r : roots)
      if (m != r && PathWithin(m, r)) return true;
  return false;
}

Status FollowScan(Sys& sys, const ScanOptions& o, const IndexHeader& start, const ScanOut& to, bool* followed) {
  OutputFile* out = to.out;
  Observer* observer = to.observer;
  ScanStats* stats = to.stats;
  *followed = false;
  auto read = ReadIndexHeader(o.previous);
  if (!read.ok()) return Status::Ok();  // the walk says what is wrong with it
  const IndexHeader& prev = *read;
  FollowState f(sys, o, observer, stats);
  FollowWhy why = HeaderMismatch(o, start, prev);
  std::vector<bool> matched(prev.filesystems.size(), false);
  if (why.empty()) why = OpenRoots(sys, prev, &matched, &f);
  if (why.empty()) why = OpenSubvolumes(sys, prev, o, &matched, &f);
  // Changes not yet committed (btrfs's delayed inode items, data not written back) are
  // not in the trees the search reads. The generations recorded were read before this,
  // so what it commits is searched again next time: seen twice, never missed.
  std::set<std::string> synced;  // one commit per filesystem, however many subvolumes
  if (why.empty())
    for (const auto& r : f.roots) {
      if (!synced.insert(r.id.uuid).second) continue;
      Status s = sys.Syncfs(r.fd);
      if (!s.ok()) why = {NoFollow::kCommit, r.path + ": cannot commit its changes before reading them (" + s.message() + ")"};
      if (!why.empty()) break;
    }
  // The storage is not measured (a seek test moves the head): with auto, it is what the
  // previous index says of the same roots.
  const bool auto_storage = o.storage == StorageChoice::kAuto;
  const bool spinning = auto_storage ? prev.spinning : o.storage == StorageChoice::kHdd;
  const StoragePolicy& policy = PolicyFor(spinning ? StorageKind::kHdd : StorageKind::kSsd);
  f.judge_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  f.judge_in_memory_only = spinning;
  f.read_leaves = !spinning;  // else the head sweeps them once in disk order, first
  f.search_threads = std::min<size_t>(FollowState::kMostSearchThreads, size_t(TreeReaders(o, policy)));
  if (spinning && why.empty()) ReadChangesAhead(sys, o, f.roots, policy, observer, stats);
  f.read_ahead_from = [&](FollowRoot& r, uint64_t from, uint64_t upto) {
    return ReadChangesAheadFrom(sys, o, r, from, upto, policy, observer, stats);
  };
  if (why.empty()) why = f.FindChanges(prev);
  if (why.empty()) why = f.MapChanged();
  if (why.empty()) why = f.StreamPrevious(prev);
  if (why.empty()) why = f.FinishChanged();
  if (why.kind == NoFollow::kStopped) {  // nothing is written: a walk would write a husk
    stats->not_followed = why.kind;
    return Status::Interrupted("stopped while following btrfs changes");
  }
  if (!why.empty()) {
    observer->Notice("not following btrfs changes: " + why.text + "; walking the tree");
    stats->not_followed = why.kind;
    return Status::Ok();
  }
  IndexHeader header = start;
  header.spinning = spinning;
  stats->storage.kind = header.spinning ? StorageKind::kHdd : StorageKind::kSsd;
  stats->storage.reason = auto_storage ? "as the previous index says" : "set by --storage";
  header.filesystems = prev.filesystems;
  for (const auto& c : f.clones) {  // a snapshot's: its source's, but for its identity
    FsRecord s = prev.filesystems[c.from_fs];
    s.subvolume = f.roots[c.root].id.subvolume;
    s.subvolume_uuid = f.roots[c.root].id.subvolume_uuid;
    header.filesystems.push_back(std::move(s));
  }
  header.followed_from = prev.created_ns;
  header.same_as_followed = f.unchanged();
  for (uint32_t k : f.gone) MarkGone(&header.filesystems[k]);
  for (const auto& r : f.roots) {
    header.filesystems[r.fs].generation = r.id.generation;
    header.filesystems[r.fs].dev = r.dev;
  }
  OANS_RETURN_IF_ERROR(f.WriteInto(header, out));
  stats->followed = true;
  *followed = true;
  if (o.stop && o.stop->load()) {
    stats->interrupted = true;
    return Status::Interrupted("scan interrupted");
  }
  return Status::Ok();
}

}  // namespace oans
