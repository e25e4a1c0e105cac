#include "lib/scan/scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "lib/base/fd.h"
#include "lib/base/paths.h"
#include "lib/base/spill.h"
#include "lib/base/storage.h"
#include "lib/base/version.h"
#include "lib/scan/builder.h"
#include "lib/scan/census.h"
#include "lib/scan/entry.h"
#include "lib/scan/estimate.h"
#include "lib/scan/filesystems.h"
#include "lib/scan/follow.h"
#include "lib/scan/kept.h"
#include "lib/scan/previous.h"
#include "lib/scan/reading.h"
#include "lib/scan/roots.h"
#include "lib/scan/sink.h"
#include "lib/btrfs/tree_map.h"
#include "lib/scan/walk.h"
#include "lib/scan/walk_ahead.h"

namespace oans {
namespace {

// The index header as far as the options tell it (the filesystems come after the walk);
// the roots canonical, each once, said once for each root dropped (roots.h).
Status StartHeader(Sys& sys, const ScanOptions& o, Observer* observer, IndexHeader* header) {
  if (o.block_size < 4096 || o.block_size % 4096 != 0)
    return Status::Invalid("--block-size must be a multiple of 4 KiB");
  OANS_ASSIGN_OR_RETURN(auto roots, CanonicalScanRoots(sys, o.roots, o.excludes));
  for (const auto& n : roots.notices) observer->Notice(n);
  header->tool_version = ToolVersion();
  header->created_ns = NowNs();
  header->block_size = o.block_size;
  header->min_size = o.min_size;
  header->excludes = o.excludes;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  header->hostname = host;
  header->command_line = o.command_line;
  header->directories = true;
  header->read_data = o.read_data;
  header->roots = std::move(roots.roots);
  return Status::Ok();
}

// What the walk's hooks share; it lives in RunScan while the walk runs.
struct WalkState {
  Sys& sys;
  const ScanOptions& o;
  const PreviousIndex& prev;
  Filesystems& filesystems;
  Sink& sink;
  Checksums& checksums;
  const RecordBuilder* builder = nullptr;  // set once the state is made: it counts into bytes_read
  std::vector<std::string> mounts{};  // mount points below the roots, sorted
  bool map_from_trees = true;       // false when the mount points are not known
  // In walk order, files are read while the walk has them open, by the walk's threads,
  // and leave at once: memory stays flat. Other orders keep the files to sort them.
  bool read_in_walk = false;
  bool trees_on_ssd = false;  // every root on btrfs, files mapped from its trees
  // The walk opens no file: after it, sizes decide what is left unread (SetAsideUnique).
  BySize by_size{};
  bool inode_order = false;  // one walker in inode order (WalkOptions::inode_order)
  bool dirs_in_disk_order = false;  // and an XFS filesystem among the roots
  std::vector<uint64_t> written{};  // then: the spooled records' sizes
  std::atomic<uint64_t> found{0}, bytes_read{0}, unopened{0}, tree_mapped{0}, walked_bytes{0};

  // Where the builder finds a file of filesystem `fs`, as far as that tells.
  FileAt At(uint32_t fs) { return FileAt(filesystems.Key(fs), filesystems.IsBtrfs(fs)); }
};

// Each file is mapped while the walk has it open. Unchanged files (and, in walk order,
// every file) are finished there; the rest wait for the disk-order read.
bool OnOpenFile(WalkState& s, int fd, WalkEntry* w) {
  if (s.o.stop && s.o.stop->load()) return true;  // stopping: leave the file for the next scan
  s.walked_bytes.fetch_add(w->st.size, std::memory_order_relaxed);
  const uint32_t fs = s.filesystems.Of(w->st.dev, fd, w->path, w->root);  // before mapping: see Filesystems
  std::vector<FiemapExtent> extents;
  const bool mapped = s.sys.Fiemap(fd, &extents).ok();
  const uint32_t flags = s.sys.InodeFlags(fd);
  w->first_physical = FirstPhysical(extents);
  if (w->st.nlink > 1) return false;  // hardlinks are merged after the walk
  FileEntry e = EntryOf(*w, fs);
  e.extents = std::move(extents);
  e.inode_flags = flags;
  FileAt at = s.At(fs);
  at.fd = fd;
  at.mapped = mapped;
  at.reuse_only = true;  // first without a stat: a file reused needs none
  Built b = s.builder->Build(at, &e);
  if (b == Built::kOpenIt && !s.read_in_walk) return false;  // kept: read after the walk
  if (b == Built::kOpenIt) {
    at.reuse_only = false;
    b = s.builder->Build(at, &e);
  }
  if (b == Built::kDone) s.sink.Add(std::move(e), s.walked_bytes.load(), s.found.load());
  return true;
}

// A file the walk offers unopened: its directory, name and inode, its entry so far and the
// directory's filesystem.
struct Unopened {
  int dirfd;
  const std::string& name;
  uint64_t ino;
  WalkEntry* w;
  uint32_t dir_fs;
};

// Unchanged files are finished from one stat by name, without opening them, when
// their extent map cannot have changed either: btrfs wrote none of their metadata
// since the previous scan, or they held only inline data.
bool FinishFromPrevious(WalkState& s, const Unopened& u, bool* open_it) {
  WalkEntry* w = u.w;
  // The directory's filesystem is the file's but for a mount on the file itself,
  // which the stat below catches: files that will be opened anyway skip the stat.
  if (!s.prev.MayFinishUnopened(s.filesystems.Key(u.dir_fs), u.ino, s.filesystems.UnchangedExtents(u.dir_fs, u.ino)))
    return false;
  auto st = s.sys.StatAt(u.dirfd, u.name);
  if (!st.ok() || !S_ISREG(st->mode) || st->nlink > 1 || st->size == 0 || st->size < s.o.min_size ||
      st->dev != w->st.dev) {
    *open_it = true;  // what the stat says now is what counts: not the trees' older state
    return false;
  }
  w->st = *st;
  const uint32_t fs = s.filesystems.Of(st->dev, -1, w->path, w->root);
  FileEntry e = EntryOf(*w, fs);
  FileAt at = s.At(fs);
  at.extents_unchanged = s.filesystems.UnchangedExtents(fs, st->ino);
  if (s.builder->Build(at, &e) != Built::kDone) return false;
  s.unopened.fetch_add(1, std::memory_order_relaxed);
  s.walked_bytes.fetch_add(st->size, std::memory_order_relaxed);
  s.sink.Add(std::move(e), s.walked_bytes.load(), s.found.load());
  return true;
}

// The maps of the regular files of the directory batch this thread is going through.
thread_local BatchMaps batch_maps;

// On btrfs, as root, the regular files of a directory batch are mapped before any is
// handed out (BatchMaps).
struct DirAt {
  int fd;
  uint64_t dev;
  const std::string& path;
  uint32_t root;
};

void OnBatch(WalkState& s, const DirAt& d, const std::vector<DirEntry>& batch) {
  batch_maps.Clear();
  if (s.o.read_data || !s.map_from_trees) return;
  const uint32_t fs = s.filesystems.Of(d.dev, d.fd, d.path, d.root);
  if (s.checksums.Committed(s.filesystems.Key(fs), d.fd)) batch_maps.Map(s.sys, d.fd, batch);
}

// On btrfs, as root, a regular file is mapped from the filesystem's trees and keyed by
// the record builder's steps 1-3, without being opened or stat'ed, whatever the read
// order: none of its data is read. Hardlinks (merged after the walk) and files that
// need reading are opened as before.
bool FinishFromTree(WalkState& s, int dirfd, uint64_t ino, uint32_t dir_fs, WalkEntry* w) {
  const std::string key = s.filesystems.Key(dir_fs);
  const uint64_t committed = s.checksums.Committed(key, dirfd);
  // A file that is a mount point is the mounted one: the trees hold the one below.
  if (!committed || !s.map_from_trees || std::binary_search(s.mounts.begin(), s.mounts.end(), w->path))
    return false;
  TreeMap map;
  if (!batch_maps.Take(s.sys, dirfd, ino, &map)) return false;
  const FileStat st = map.Stat(w->st.dev);
  // Changed since the scan's commit (its item may be older than the file), a hardlink,
  // empty, or without a single extent: opened.
  if (map.inode.transid > committed || !S_ISREG(st.mode) || st.nlink != 1 || st.size == 0 ||
      st.size < s.o.min_size || map.extents.empty())
    return false;
  w->st = st;
  FileEntry e = EntryOf(*w, dir_fs);
  e.extents = std::move(map.extents);
  e.inode_flags = map.inode_flags;
  FileAt at = s.At(dir_fs);
  at.dirfd = dirfd;
  at.mapped = true;
  at.inline_data = map.inline_data;
  if (s.builder->Build(at, &e) != Built::kDone) return false;
  s.tree_mapped.fetch_add(1, std::memory_order_relaxed);
  if (e.reused) s.unopened.fetch_add(1, std::memory_order_relaxed);
  s.walked_bytes.fetch_add(st.size, std::memory_order_relaxed);
  s.sink.Add(std::move(e), s.walked_bytes.load(), s.found.load());
  return true;
}

bool OnUnopenedFile(WalkState& s, int dirfd, const std::string& name, uint64_t ino, WalkEntry* w) {
  if (s.o.stop && s.o.stop->load()) return false;
  const uint32_t dir_fs = s.filesystems.Of(w->st.dev, -1, w->path, w->root);
  bool open_it = false;
  if (!s.o.previous.empty() && FinishFromPrevious(s, {dirfd, name, ino, w, dir_fs}, &open_it)) return true;
  return !open_it && !s.o.read_data && FinishFromTree(s, dirfd, ino, dir_fs, w);
}

constexpr int kSsdTreeWalkers = 32;

WalkOptions WalkOptionsFor(WalkState& s, int threads) {
  WalkOptions wo;
  wo.excludes = s.o.excludes;
  wo.min_size = s.o.min_size;
  // The walk waits on metadata reads: at least 8 walkers, even when one reads data; on
  // an SSD where btrfs's trees map the files (and few are read), unless --io-threads
  // says otherwise, kSsdTreeWalkers: the SSD serves those reads in parallel.
  wo.threads = s.read_in_walk ? threads : std::max(8, threads);
  if (s.read_in_walk && s.trees_on_ssd && s.o.io_threads == 0) wo.threads = std::max(wo.threads, kSsdTreeWalkers);
  wo.files_found = &s.found;
  wo.inode_order = s.inode_order;
  wo.dirs_in_disk_order = s.inode_order && s.dirs_in_disk_order;
  if (!s.by_size.any()) wo.on_file = [&s](int fd, WalkEntry* w) -> bool { return OnOpenFile(s, fd, w); };
  wo.on_dir = [&s](int fd, const std::string& path, uint32_t root) {
    auto st = s.sys.Fstat(fd);
    if (st.ok()) s.sink.AddDir({path, s.filesystems.Of(st->dev, fd, path, root), st->ino, st->mtime_ns, st->ctime_ns});
  };
  if (!s.o.read_data)
    wo.on_batch = [&s](int dirfd, uint64_t dev, const std::string& path, uint32_t root,
                       const std::vector<DirEntry>& batch) { OnBatch(s, {dirfd, dev, path, root}, batch); };
  if (!s.o.previous.empty() || !s.o.read_data)
    wo.without_open = [&s](int dirfd, const std::string& name, uint64_t ino, WalkEntry* w) -> bool {
      return OnUnopenedFile(s, dirfd, name, ino, w);
    };
  return wo;
}

void CountWalk(const WalkResult& w, const WalkState& s, ScanStats* stats) {
  stats->unopened = s.unopened.load();
  stats->tree_mapped = s.tree_mapped.load();
  stats->dirs = w.dirs;
  stats->skipped_special = w.skipped_special;
  stats->skipped_symlinks = w.skipped_symlinks;
  stats->skipped_mounts = w.skipped_mounts;
  stats->dirs_in_disk_order = w.dirs_in_disk_order;
  stats->skipped_small = w.skipped_small;
  stats->excluded = w.excluded;
  stats->exclude_hits = w.exclude_hits;
}

// The header, now that the walk has met every filesystem, then the spooled records.
Status WriteStart(Sys& sys, IndexHeader& header, Filesystems& filesystems, Sink& sink, RefCensus* census,
                  IndexWriter* writer) {
  header.filesystems = filesystems.list();
  if (header.filesystems.empty()) {
    FsRecord r;
    r.uuid = "none";
    header.filesystems.push_back(r);
  }
  census->Describe(sys, &header);
  writer->OnAdd([census](const FileEntry& e) { census->Note(e); });  // the records read later
  OANS_RETURN_IF_ERROR(writer->WriteHeader(header));
  return sink.CopyInto(writer);
}

// The mount points below the roots: files the trees would map are the ones below them.
void FindMounts(Sys& sys, const std::vector<std::string>& roots, WalkState* state) {
  auto mounts = sys.MountPoints();
  state->map_from_trees = mounts.ok();  // not knowing which files are mount points: open them all
  for (const auto& m : mounts.ok() ? *mounts : std::vector<std::string>())
    for (const auto& r : roots)
      if (m != r && PathWithin(m, r)) state->mounts.push_back(m);
  std::sort(state->mounts.begin(), state->mounts.end());
}

// Before the walk: the mount points below the roots, btrfs's trees read ahead on a
// spinning disk, and how files are met (trees_on_ssd, by_size).
void PrepareWalk(WalkState& state, const IndexHeader& header, Observer* observer, ScanStats* stats) {
  const ScanOptions& o = state.o;
  if (header.mounts_below) FindMounts(state.sys, header.roots, &state);
  const bool ahead = PolicyFor(stats->storage.kind).read_trees_ahead && !o.read_data && state.map_from_trees;
  if (ahead) ReadBtrfsTreesAhead(state.sys, {o, state.filesystems, state.checksums}, header.roots, observer, stats);
  const auto listed = state.filesystems.list();
  const auto btrfs = [](const FsRecord& f) { return f.type == "btrfs"; };
  const bool all_btrfs = !listed.empty() && std::all_of(listed.begin(), listed.end(), btrfs);
  // One walker in inode order where btrfs trees read ahead do not serve the walk.
  state.inode_order = PolicyFor(stats->storage.kind).walk_in_inode_order && !(ahead && all_btrfs);
  if (state.inode_order && !all_btrfs) SweepScanInodeTables(state.sys, header.roots, o.stop, observer, stats);
  const auto xfs = [](const FsRecord& f) { return f.type == "xfs"; };
  state.dirs_in_disk_order = std::any_of(listed.begin(), listed.end(), xfs);
  state.trees_on_ssd = stats->storage.kind == StorageKind::kSsd && !o.read_data && state.map_from_trees && all_btrfs;
  state.by_size = BySizeFor(o, o.read_data || !all_btrfs);
}

}  // namespace

Status RunScan(Sys& sys, const ScanOptions& o, OutputFile* out, Observer* observer, ScanStats* stats) {
  Observer quiet;
  if (!observer) observer = &quiet;
  IndexHeader header;
  OANS_RETURN_IF_ERROR(StartHeader(sys, o, observer, &header));
  header.mounts_below = MountedBelow(sys, header.roots);
  if (!o.previous.empty()) {
    bool followed = false;
    OANS_RETURN_IF_ERROR(FollowScan(sys, o, header, {out, observer, stats}, &followed));
    if (followed) return Status::Ok();
    const NoFollow why = stats->not_followed;
    *stats = ScanStats();
    stats->not_followed = why;
  }
  std::unique_ptr<PreviousIndex> prev;
  OANS_RETURN_IF_ERROR(LoadPrevious(o, observer, stats, &prev));
  Filesystems filesystems(sys, header.roots, *prev, !o.refresh_extents, observer);
  const Reading reading = ChooseReading(sys, o, header.roots, &filesystems);
  stats->storage = reading.storage;
  stats->threads = reading.threads;
  stats->order = reading.order;
  observer->Notice(DescribeReading(reading));
  header.spinning = stats->storage.kind == StorageKind::kHdd;  // for the plan's round size
  auto spool = TempFile::Create(TempDirectory(o.temp_dir));
  if (!spool.ok()) return spool.status();
  auto dir_spool = TempFile::Create(TempDirectory(o.temp_dir));
  if (!dir_spool.ok()) return dir_spool.status();
  const bool previous_whole = !o.previous.empty() && !stats->previous_truncated && !stats->previous_damaged;
  Sink sink(std::move(*spool), std::move(*dir_spool), stats, observer,
            EstimateWalk(sys, header.roots, stats->previous_records, stats->previous_bytes, previous_whole));
  RefCensus census(o.memory / 96, o.census_look_up_all);  // ranges of 24 bytes: a hundredth of --memory
  Checksums checksums(sys, o.read_data);
  WalkState state{sys, o, *prev, filesystems, sink, checksums};
  sink.OnAdd([&census, &state](const FileEntry& e) {
    census.Note(e);
    if (state.by_size.any()) state.written.push_back(e.size);
  });
  const RecordBuilder builder(sys, o, *prev, &checksums, &state.bytes_read);
  state.builder = &builder;
  state.read_in_walk = stats->order == ReadOrder::kNone;
  PrepareWalk(state, header, observer, stats);
  WalkOptions wo = WalkOptionsFor(state, stats->threads);
  tbb::global_control allow_walkers(tbb::global_control::max_allowed_parallelism,
                                    size_t(std::max<int>(wo.threads, int(std::thread::hardware_concurrency()))));
  auto walked = Walk(sys, header.roots, wo);
  if (!walked.ok()) return walked.status();
  OANS_RETURN_IF_ERROR(sink.status());
  WalkResult& w = *walked;
  CountWalk(w, state, stats);
  const uint64_t found = state.found.load();
  const uint64_t walked_bytes = state.walked_bytes.load();
  observer->Progress({"walk", walked_bytes, walked_bytes, found, found});  // exact now

  std::vector<Candidate> kept = MergeKept(&w.files, filesystems, stats);
  IndexWriter writer(out);
  OANS_RETURN_IF_ERROR(WriteStart(sys, header, filesystems, sink, &census, &writer));
  const KeptRun job{sys, o, builder, filesystems, &writer, observer, stats, found};
  if (state.by_size.any())
    OANS_RETURN_IF_ERROR(WriteUnread(job, &kept, std::move(state.written),
                                     KnownBeforeIn(*prev, filesystems), state.by_size));
  KeptProgress progress;
  Status written = ReadKept(job, kept, &progress);
  stats->bytes_read = state.bytes_read.load();
  stats->checksums = checksums.counts();
  OANS_RETURN_IF_ERROR(written);
  prev->WarnUnreadable(observer, o.temp_dir);
  OANS_RETURN_IF_ERROR(RecordProblems(w, o, &writer, observer, stats));
  if (!kept.empty()) observer->Progress({"hash", progress.done, progress.total, stats->files, found});
  // Stopped, before the census or during it: what was gathered is kept, cut short.
  Status s = o.stop && o.stop->load() ? Status::Interrupted("scan interrupted")
                                      : census.Write(header, o.stop, observer, &writer);
  if (s.code() == Status::Code::kInterrupted) {
    stats->interrupted = true;
    OANS_RETURN_IF_ERROR(writer.Flush());
  }
  OANS_RETURN_IF_ERROR(s);
  stats->census_extents = census.extents();
  stats->census_looked_up = census.looked_up();
  return writer.Finish();
}

}  // namespace oans
