#include "lib/scan/follow.h"

#include <sys/stat.h>

#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "lib/base/paths.h"
#include "lib/base/spill.h"
#include "lib/btrfs/changes.h"
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

// Opens and identifies each root and matches it with the previous index's subvolume.
FollowWhy OpenRoots(Sys& sys, const IndexHeader& prev, FollowState* f) {
  std::vector<bool> matched(prev.filesystems.size(), false);
  for (uint32_t i = 0; i < prev.roots.size(); ++i) {
    FollowRoot r;
    r.path = prev.roots[i];
    auto fd = sys.OpenDirNoFollow(r.path);
    if (!fd.ok()) return {NoFollow::kRoot, r.path + ": " + fd.status().message()};
    r.fd = *fd;
    f->roots.push_back(r);  // closed by FollowState
    FollowRoot& root = f->roots.back();
    auto st = sys.Fstat(root.fd);
    auto id = sys.Identify(root.fd);
    if (!st.ok() || !id.ok()) return {NoFollow::kRoot, root.path + ": cannot identify its filesystem"};
    if (id->type != "btrfs" || id->subvolume_uuid.empty() || id->generation == 0)
      return {NoFollow::kNotBtrfs, root.path + " is not on btrfs"};
    root.dev = st->dev;
    root.id = *id;
    int found = -1;
    for (uint32_t k = 0; k < prev.filesystems.size(); ++k)
      if (prev.filesystems[k].uuid == id->uuid && prev.filesystems[k].subvolume == id->subvolume) found = int(k);
    if (found < 0) return {NoFollow::kSubvolume, root.path + ": its subvolume is not the one the previous index knew"};
    const FsRecord& was = prev.filesystems[found];
    if (was.subvolume_uuid != id->subvolume_uuid)
      return {NoFollow::kSubvolume, root.path + ": another subvolume now has its id"};
    if (was.generation == 0 || was.generation > id->generation)
      return {NoFollow::kGeneration, root.path + ": the previous index's generation is unknown or newer than the filesystem's"};
    if (matched[found]) return {NoFollow::kSubvolume, "two roots lie in one subvolume"};
    matched[found] = true;
    root.fs = uint32_t(found);
    root.since = was.generation + 1;
    if (st->ino != kBtrfsFirstInode) {
      auto rel = sys.DirectoryPath(root.fd, 0, st->ino);
      if (!rel.ok()) return {NoFollow::kRoot, root.path + ": " + rel.status().message()};
      root.rel = *rel;
    }
  }
  for (bool m : matched)
    if (!m) return {NoFollow::kSubvolume, "the previous index holds a subvolume below the roots"};
  return {};
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
  if (why.empty()) why = OpenRoots(sys, prev, &f);
  // Changes not yet committed (btrfs's delayed inode items, data not written back) are
  // not in the trees the search reads. The generations recorded were read before this,
  // so what it commits is searched again next time: seen twice, never missed.
  if (why.empty())
    for (const auto& r : f.roots) {
      Status s = sys.Syncfs(r.fd);
      if (!s.ok()) why = {NoFollow::kCommit, r.path + ": cannot commit its changes before reading them (" + s.message() + ")"};
      if (!why.empty()) break;
    }
  if (why.empty()) why = f.FindChanges();
  if (why.empty()) why = f.MapChanged();
  if (why.empty()) why = f.StreamPrevious(prev);
  if (why.empty()) why = f.FinishChanged();
  if (!why.empty()) {
    observer->Notice("not following btrfs changes: " + why.text + "; walking the tree");
    stats->not_followed = why.kind;
    return Status::Ok();
  }
  IndexHeader header = start;
  // The storage is not measured (a seek test moves the head): with auto, it is what the
  // previous index says of the same roots.
  const bool auto_storage = o.storage == StorageChoice::kAuto;
  header.spinning = auto_storage ? prev.spinning : o.storage == StorageChoice::kHdd;
  stats->storage.kind = header.spinning ? StorageKind::kHdd : StorageKind::kSsd;
  stats->storage.reason = auto_storage ? "as the previous index says" : "set by --storage";
  header.filesystems = prev.filesystems;
  header.followed_from = prev.created_ns;
  header.same_as_followed = f.unchanged();
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
