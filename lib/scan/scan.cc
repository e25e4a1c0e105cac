#include "lib/scan/scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "lib/scan/estimate.h"
#include "lib/scan/hasher.h"
#include "lib/base/spill.h"
#include "lib/base/version.h"
#include "lib/scan/walk.h"

namespace oans {
namespace {

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The previous index, compact: one sorted array of fixed records and arrays of block
// hashes and extents, looked up by (filesystem key, inode).
class PreviousIndex {
 public:
  // What the previous scan knew of a btrfs subvolume: its generation before any of its
  // files' extents were read.
  struct Subvolume {
    std::string uuid;
    uint64_t generation = 0;
  };

  Status Load(const std::string& path, uint32_t block_size, ScanStats* stats, Observer* observer) {
    IndexReadOptions ro;
    ro.allow_truncated = true;
    std::vector<uint32_t> fs_of;  // the header's filesystems -> FsId
    bool header_seen = false;
    auto r = ReadIndex(
        path, ro,
        [&](const IndexHeader& h) {
          header_seen = true;
          fs_of.clear();
          for (const auto& f : h.filesystems) {
            fs_of.push_back(FsId(f.Key()));
            // Several sections: the oldest generation covers the records of all of them;
            // a subvolume unknown to one section, or another one, leaves nothing known.
            auto [it, added] = subvolumes_.emplace(f.Key(), Subvolume{f.subvolume_uuid, f.generation});
            if (!added) {
              if (it->second.uuid != f.subvolume_uuid) it->second.generation = 0;
              it->second.generation = std::min(it->second.generation, f.generation);
            }
          }
          return Status::Ok();
        },
        [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
          if (h.block_size != block_size) return Status::Ok();  // other block size: nothing reusable
          for (auto& f : batch) {
            if (!f.hashed) continue;
            Rec rec;
            rec.fs = fs_of[f.fs];
            rec.ino = f.ino;
            rec.id = FileIdentity::Of(f);
            rec.hash = f.hash;
            rec.inode_flags = f.inode_flags;
            rec.inline_only = !f.extents.empty();
            rec.mapped = !f.extents.empty();
            for (const auto& x : f.extents) {
              if (!(x.flags & kExtentInline)) rec.inline_only = false;
              if (x.flags & (kExtentDelalloc | kExtentUnknown)) rec.mapped = false;
            }
            rec.first_extent = extents_.Append(f.extents);
            rec.extents = uint32_t(f.extents.size());
            rec.first_block = blocks_.Append(f.block_hashes);
            rec.blocks = uint32_t(f.block_hashes.size());
            keys_.push_back({rec.ino, rec.fs, uint32_t(recs_.size())});
            recs_.push_back(rec);
          }
          return Status::Ok();
        });
    if (!r.ok()) {
      // Damage in an index (after its header); not an index at all is another error.
      if (r.status().code() != Status::Code::kCorrupt || !header_seen)
        return r.status().Prepend("--previous");
      damage_ = r.status().message();
      return Status::Corrupt("--previous: " + damage_ +
                             ". Its hashes cannot be trusted; remove it, or run with --previous-damaged=rescan to "
                             "scan every file again without it");
    }
    // Records stay where they were read; small keys are sorted. Later records of the
    // same inode win, as they would in a map.
    std::sort(keys_.begin(), keys_.end());
    size_t kept = 0;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (kept && keys_[kept - 1].fs == keys_[i].fs && keys_[kept - 1].ino == keys_[i].ino) keys_[kept - 1] = keys_[i];
      else keys_[kept++] = keys_[i];
    }
    keys_.resize(kept);
    keys_.shrink_to_fit();
    stats->previous_files = keys_.size();
    stats->previous_records = r->totals.records;
    stats->previous_bytes = r->totals.bytes;
    stats->previous_truncated = r->truncated;
    if (r->truncated)
      observer->Notice("warning: " + path + " is incomplete (an interrupted scan, cut at byte " +
                       std::to_string(r->cut_at) + "); reusing the " + std::to_string(keys_.size()) +
                       " files of its complete batches");
    return Status::Ok();
  }

  // After Load failed: the damage found in an index after its header ("" if none).
  const std::string& damage() const { return damage_; }

  // Whether the record of (fs_key, ino), if any, could be finished unopened (see Reuse).
  bool MayFinishUnopened(const std::string& fs_key, uint64_t ino, bool extents_unchanged) const {
    const Rec* r = Find(fs_key, ino);
    return r && (r->inline_only || (extents_unchanged && r->mapped));
  }

  // Up to n + 1 increasing bounds from `first` to `last` + 1 that cut the inode numbers
  // of the records of filesystem `fs_key` into n slices of about equal count.
  std::vector<uint64_t> InodeSlices(const std::string& fs_key, int n, uint64_t first, uint64_t last) const {
    std::vector<uint64_t> b{first};
    auto f = fs_ids_.find(fs_key);
    if (f != fs_ids_.end()) {
      // keys_ is sorted by (fs, ino): this filesystem's records are one sorted run.
      auto lo = std::lower_bound(keys_.begin(), keys_.end(), Key{0, f->second, 0});
      auto hi = std::lower_bound(keys_.begin(), keys_.end(), Key{0, f->second + 1, 0});
      const size_t count = size_t(hi - lo);
      for (int k = 1; k < n && count; ++k) {
        uint64_t at = lo[long(count * size_t(k) / size_t(n))].ino;
        if (at > b.back() && at <= last) b.push_back(at);
      }
    }
    b.push_back(last + 1);
    return b;
  }

  // The previous scan's view of a btrfs subvolume, or null when it knew no generation.
  const Subvolume* SubvolumeOf(const std::string& fs_key) const {
    auto it = subvolumes_.find(fs_key);
    return it == subvolumes_.end() || it->second.generation == 0 || it->second.uuid.empty() ? nullptr : &it->second;
  }

  // Fills e's hashes when the previous index holds this file unchanged. With
  // `unopened`, e has only been stat'ed: the record's extents and inode flags are taken
  // too, which needs a record holding nothing but inline data (btrfs keeps small files
  // in its metadata; they have nothing to share and cannot change without a new ctime),
  // or `extents_unchanged` (btrfs says the file's metadata has not been written since
  // the previous scan) and a complete extent map in the record.
  bool Reuse(const std::string& fs_key, FileEntry* e, bool unopened = false, bool extents_unchanged = false) const {
    const Rec* it = Find(fs_key, e->ino);
    if (!it || !FileIdentity::Of(*e).HashesStillValid(it->id)) return false;
    if (unopened) {
      if (!it->inline_only && !(extents_unchanged && it->mapped)) return false;
      const FiemapExtent* x = extents_.Get(it->first_extent);
      e->extents.assign(x, x + it->extents);
      e->inode_flags = it->inode_flags;
    }
    e->hash = it->hash;
    const Hash128* b = blocks_.Get(it->first_block);
    e->block_hashes.assign(b, b + it->blocks);
    e->hashed = true;
    e->reused = true;
    return true;
  }

 private:
  struct Rec {
    uint32_t fs = 0, blocks = 0;
    uint64_t ino = 0, first_block = 0;
    FileIdentity id;
    Hash128 hash;
    uint64_t first_extent = 0;
    uint32_t inode_flags = 0, extents = 0;
    bool inline_only = false;  // extents hold inline data only
    bool mapped = false;       // a complete extent map (no delayed allocation)
  };
  const Rec* Find(const std::string& fs_key, uint64_t ino) const {
    auto f = fs_ids_.find(fs_key);
    if (f == fs_ids_.end()) return nullptr;
    const Key key{ino, f->second, 0};
    auto k = std::lower_bound(keys_.begin(), keys_.end(), key);
    if (k == keys_.end() || k->fs != key.fs || k->ino != key.ino) return nullptr;
    return &recs_[k->at];
  }
  uint32_t FsId(const std::string& key) { return fs_ids_.emplace(key, uint32_t(fs_ids_.size())).first->second; }
  std::string damage_;
  std::map<std::string, uint32_t> fs_ids_;
  std::map<std::string, Subvolume> subvolumes_;  // by filesystem key
  // Sorted by (fs, ino) for lookups; `at` numbers records in the order read.
  struct Key {
    uint64_t ino;
    uint32_t fs, at;
    bool operator<(const Key& o) const { return std::tie(fs, ino, at) < std::tie(o.fs, o.ino, o.at); }
  };
  ChunkedArray<Rec> recs_;  // nothing moves as it grows
  std::vector<Key> keys_;
  RunStore<Hash128> blocks_;
  RunStore<FiemapExtent> extents_;
};

// The filesystems met so far, identified once per st_dev through an open file. On btrfs,
// identifying one also records its generation and, when the previous index knew it at
// an older generation, asks which inodes may have changed since (see UnchangedExtents).
class Filesystems {
 public:
  Filesystems(Sys& sys, const std::vector<std::string>& roots, const PreviousIndex& prev, bool use_generations,
              Observer* observer)
      : sys_(sys), roots_(roots), prev_(prev), use_generations_(use_generations), observer_(observer) {}
  // Caller holds no lock; fd is a file on `dev` (or -1: identify by opening `path`).
  uint32_t Of(uint64_t dev, int fd, const std::string& path, uint32_t root) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = of_dev_.find(dev);
    if (it != of_dev_.end()) return it->second;
    FsRecord r;
    r.dev = dev;
    int own = -1;
    if (fd < 0) {
      auto o = sys_.OpenNoFollow(path);
      if (o.ok()) fd = own = *o;
    }
    Result<FsIdentity> id = fd >= 0 ? sys_.Identify(fd) : Result<FsIdentity>(Status::Invalid("not open"));
    Changes changes;
    if (id.ok()) {
      r.uuid = id->uuid;
      r.subvolume = id->subvolume;
      r.type = id->type;
      r.block_size = id->block_size;
      r.mount_point = root < roots_.size() ? roots_[root] : "";
      r.subvolume_uuid = id->subvolume_uuid;
      r.generation = id->generation;
      for (auto& d : id->devices)
        if (std::find(devices_.begin(), devices_.end(), d) == devices_.end()) devices_.push_back(d);
      changes = Pending(r, path);
    } else {
      // Unidentified: an entry of its own, never paired with anything else.
      r.uuid = "unknown-dev-" + std::to_string(dev);
    }
    if (own >= 0) sys_.Close(own);
    list_.push_back(r);
    keys_.push_back(r.Key());
    changes_.push_back(std::move(changes));
    return of_dev_[dev] = uint32_t(list_.size() - 1);
  }
  // Whether btrfs says inode `ino` of filesystem `i` has had no metadata written since
  // the previous scan's generation: its extent map and flags are then those recorded.
  // The search runs when first asked, in `search_threads` slices of inode numbers.
  bool UnchangedExtents(uint32_t i, uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    Changes& c = changes_[i];
    if (c.pending) Search(list_[i], &c);
    return c.known && !std::binary_search(c.inodes.begin(), c.inodes.end(), ino);
  }
  void SetSearchThreads(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    search_threads_ = std::max(1, n);
  }
  // Keys are stable once added; safe to read for an index returned by Of.
  std::string Key(uint32_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return keys_[i];
  }
  std::vector<FsRecord> list() {
    std::lock_guard<std::mutex> lock(mu_);
    return list_;
  }
  std::vector<std::string> devices() {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_;
  }

 private:
  Sys& sys_;
  const std::vector<std::string>& roots_;
  std::mutex mu_;
  struct Changes {
    bool pending = false;  // to be searched: since and path are set
    bool known = false;    // searched: inodes lists every inode that may have changed
    uint64_t since = 0;
    std::string path;      // a file or directory on the subvolume, to search through
    std::vector<uint64_t> inodes;  // sorted
  };
  // The generation is taken when the subvolume is first met, before any of its files is
  // mapped, so the next scan's search covers every change made after this one read.
  Changes Pending(const FsRecord& r, const std::string& path) {
    Changes c;
    const PreviousIndex::Subvolume* before = prev_.SubvolumeOf(r.Key());
    if (!use_generations_ || !before || r.generation == 0) return c;
    // Another subvolume under the same id, or a filesystem restored from an older copy.
    if (before->uuid != r.subvolume_uuid || before->generation > r.generation) {
      observer_->Notice("btrfs subvolume " + std::to_string(r.subvolume) + " at " + path +
                        " is not the one the previous index saw (uuid or generation differs); mapping every file");
      return c;
    }
    c.pending = true;
    c.since = before->generation;
    c.path = path;
    return c;
  }
  // Slices of inode numbers holding about as many previous records each, searched at
  // once: the search waits on metadata reads, which a fast disk serves in parallel.
  void Search(const FsRecord& r, Changes* c) {
    c->pending = false;
    auto fd = sys_.OpenNoFollow(c->path);
    Status s = fd.ok() ? Status::Ok() : fd.status();
    if (s.ok()) {
      const std::vector<uint64_t> bounds = prev_.InodeSlices(r.Key(), search_threads_, kBtrfsFirstInode, kBtrfsLastInode);
      const size_t n = bounds.size() - 1;
      std::vector<std::vector<uint64_t>> found(n);
      std::vector<Status> status(n);
      auto one = [&](size_t k) {
        status[k] = sys_.ChangedInodes(*fd, c->since, bounds[k], bounds[k + 1] - 1, &found[k]);
      };
      std::vector<std::thread> threads;
      for (size_t k = 1; k < n; ++k) threads.emplace_back(one, k);
      one(0);
      for (auto& t : threads) t.join();
      sys_.Close(*fd);
      for (size_t k = 0; k < n && s.ok(); ++k) {
        s = status[k];
        c->inodes.insert(c->inodes.end(), found[k].begin(), found[k].end());
      }
    }
    if (!s.ok()) {
      observer_->Notice("btrfs subvolume " + std::to_string(r.subvolume) + ": cannot list the files changed since " +
                        "the previous index (" + s.message() + "); mapping every file" +
                        (s.errnum() == EPERM ? " (this needs root)" : ""));
      std::vector<uint64_t>().swap(c->inodes);
      return;
    }
    c->known = true;
  }

  const PreviousIndex& prev_;
  const bool use_generations_;
  Observer* observer_;
  int search_threads_ = 1;
  std::map<uint64_t, uint32_t> of_dev_;
  std::vector<FsRecord> list_;
  std::vector<std::string> keys_;
  std::vector<Changes> changes_;
  std::vector<std::string> devices_;
};

FileEntry EntryOf(const WalkEntry& w, uint32_t fs) {
  FileEntry e;
  e.path = w.path;
  e.fs = fs;
  e.dev = w.st.dev;
  e.ino = w.st.ino;
  e.size = w.st.size;
  e.mtime_ns = w.st.mtime_ns;
  e.ctime_ns = w.st.ctime_ns;
  e.nlink = w.st.nlink;
  return e;
}

void Fail(FileEntry* e, const Status& s) {
  e->error = s.message();
  e->errnum = s.errnum();
  e->hashed = false;
  e->block_hashes.clear();
}

// Fills e (identity from the walk) from the open file: extents unless `mapped`, then
// hashes, reused from the previous index when unchanged. Problems become e's error.
// False when the scan was stopped while reading: e is then not to be recorded.
bool ReadOpen(Sys& sys, int fd, bool mapped, const std::string& fs_key, const PreviousIndex& prev,
              const ScanOptions& o, std::vector<char>* buffer, std::atomic<uint64_t>* bytes_read, FileEntry* e) {
  auto st = sys.Fstat(fd);
  if (!st.ok()) return Fail(e, st.status()), true;
  if (st->dev != e->dev || st->ino != e->ino || !S_ISREG(st->mode))
    return Fail(e, Status::Mismatch("replaced by another file since the walk")), true;
  e->size = st->size;
  e->mtime_ns = st->mtime_ns;
  e->ctime_ns = st->ctime_ns;
  e->nlink = st->nlink;
  if (!mapped) {
    e->inode_flags = sys.InodeFlags(fd);
    std::vector<FiemapExtent> ext;
    if (sys.Fiemap(fd, &ext).ok()) e->extents = std::move(ext);  // no map is not fatal: nothing is shared then
  }
  if (e->size == 0) return Fail(e, Status::Mismatch("became empty since the walk")), true;
  if (prev.Reuse(fs_key, e)) return true;
  auto h = HashFile(sys, fd, e->size, o.block_size, buffer,
                    [](void* ctx, uint64_t n) { static_cast<std::atomic<uint64_t>*>(ctx)->fetch_add(n); },
                    bytes_read, o.stop);
  if (h.status().code() == Status::Code::kInterrupted) return false;  // left for the next scan
  if (!h.ok()) return Fail(e, h.status()), true;
  auto after = sys.Fstat(fd);
  if (!after.ok()) return Fail(e, after.status()), true;
  if (after->size != e->size || after->mtime_ns != e->mtime_ns || after->ctime_ns != e->ctime_ns)
    return Fail(e, Status::Mismatch("changed while being read")), true;
  e->hash = h->whole;
  e->block_hashes = std::move(h->blocks);
  e->hashed = true;
  return true;
}

// A file kept for reading after the walk (disk order, or a hardlink to merge).
struct Candidate {
  WalkEntry entry;
  std::vector<std::string> other_paths;
  uint32_t fs = 0;
};

// Records written while the walk runs go to an unnamed temporary file, since the header
// (which lists the filesystems met) must come first; it is copied out after the walk.
class Sink {
 public:
  Sink(std::unique_ptr<TempFile> spool, ScanStats* stats, Observer* observer, const WalkEstimate& estimate)
      : spool_(std::move(spool)), writer_(spool_->fd(), "the scan's temporary spool"), stats_(stats),
        observer_(observer), estimate_(estimate) {}
  // walked_bytes: the size of the files the walk met so far, files: their number.
  Status Add(FileEntry e, uint64_t walked_bytes, uint64_t files) {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.reused) stats_->reused++;
    else if (e.hashed) stats_->hashed++;
    if (!e.error.empty()) {
      stats_->errors++;
      observer_->Notice(e.path + ": " + e.error);
    }
    stats_->files++;
    stats_->bytes += e.size;
    if (status_.ok()) status_ = writer_.Add(std::move(e));
    auto now = std::chrono::steady_clock::now();
    if (now - last_ > std::chrono::milliseconds(200)) {
      last_ = now;
      observer_->Progress(WalkProgress(estimate_, walked_bytes, files));
    }
    return status_;
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  // Flushes and copies the records into `out` after its header.
  Status CopyInto(IndexWriter* out) {
    OANS_RETURN_IF_ERROR(status_);
    OANS_RETURN_IF_ERROR(writer_.Flush());
    return out->AppendFrames(*spool_, writer_.totals());
  }

 private:
  std::mutex mu_;
  std::unique_ptr<TempFile> spool_;
  IndexWriter writer_;
  ScanStats* stats_;
  Observer* observer_;
  const WalkEstimate estimate_;
  Status status_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

const char* ReadOrderName(ReadOrder o) {
  switch (o) {
    case ReadOrder::kPhysical: return "physical";
    case ReadOrder::kInode: return "inode";
    case ReadOrder::kNone: return "none";
    default: return "auto";
  }
}

Status RunScan(Sys& sys, const ScanOptions& o, OutputFile* out, Observer* observer, ScanStats* stats) {
  Observer quiet;
  if (!observer) observer = &quiet;
  if (o.block_size < 4096 || o.block_size % 4096 != 0)
    return Status::Invalid("--block-size must be a multiple of 4 KiB");
  if (o.roots.empty()) return Status::Invalid("no root to scan");
  IndexHeader header;
  header.tool_version = ToolVersion();
  header.created_ns = NowNs();
  header.block_size = o.block_size;
  header.min_size = o.min_size;
  header.excludes = o.excludes;
  header.hostname = Hostname();
  header.command_line = o.command_line;
  for (const auto& r : o.roots) {
    auto n = NormalizeRoot(r);
    if (!n.ok()) return n.status().Prepend("scan root");
    header.roots.push_back(*n);
  }

  auto loaded = std::make_unique<PreviousIndex>();
  if (!o.previous.empty()) {
    Status s = loaded->Load(o.previous, o.block_size, stats, observer);
    if (!s.ok() && !(!loaded->damage().empty() && o.previous_damaged_rescan)) return s;
    if (!s.ok()) {
      observer->Notice("warning: --previous: " + loaded->damage() + "; reusing nothing from it, every file is read");
      loaded = std::make_unique<PreviousIndex>();
      stats->previous_files = 0;
      stats->previous_damaged = true;
    }
  }
  const PreviousIndex& prev = *loaded;

  // Storage kind, threads and order, from the roots' filesystems.
  Filesystems filesystems(sys, header.roots, prev, !o.refresh_extents, observer);
  for (uint32_t i = 0; i < header.roots.size(); ++i) {
    auto st = sys.StatAt(AT_FDCWD, header.roots[i]);
    if (st.ok()) filesystems.Of(st->dev, -1, header.roots[i], i);
  }
  if (o.storage == StorageChoice::kAuto) {
    stats->storage = sys.DetectStorage(filesystems.devices());
  } else {
    stats->storage.kind = o.storage == StorageChoice::kHdd ? StorageKind::kHdd : StorageKind::kSsd;
    stats->storage.reason = "set by --storage";
  }
  const bool hdd = stats->storage.kind == StorageKind::kHdd;
  stats->threads = o.io_threads > 0 ? o.io_threads : (hdd ? 1 : 8);
  filesystems.SetSearchThreads(stats->threads);
  stats->order = o.order != ReadOrder::kAuto ? o.order : (hdd ? ReadOrder::kPhysical : ReadOrder::kNone);
  // In walk order, files are read while the walk has them open, by the walk's threads,
  // and leave at once: memory stays flat. Other orders keep the files to sort them.
  const bool read_in_walk = stats->order == ReadOrder::kNone;
  observer->Notice("storage: " + std::string(StorageKindName(stats->storage.kind)) + " (" +
                   stats->storage.reason + "); " + std::to_string(stats->threads) + " reader thread(s), " +
                   ReadOrderName(stats->order) + " order");

  auto spool = TempFile::Create(TempDirectory(o.temp_dir));
  if (!spool.ok()) return spool.status();
  const bool previous_whole = !o.previous.empty() && !stats->previous_truncated && !stats->previous_damaged;
  Sink sink(std::move(*spool), stats, observer,
            EstimateWalk(sys, header.roots, stats->previous_records, stats->previous_bytes, previous_whole));
  std::atomic<uint64_t> found{0}, bytes_read{0}, walked_bytes{0};
  WalkOptions wo;
  wo.excludes = o.excludes;
  wo.min_size = o.min_size;
  // The walk waits on metadata reads: at least 8 walkers, even when one reads data.
  wo.threads = read_in_walk ? stats->threads : std::max(8, stats->threads);
  wo.files_found = &found;
  // Each file is mapped while the walk has it open. Unchanged files (and, in walk order,
  // every file) are finished there; the rest wait for the disk-order read.
  wo.on_file = [&](int fd, WalkEntry* w) -> bool {
    if (o.stop && o.stop->load()) return true;  // stopping: leave the file for the next scan
    walked_bytes.fetch_add(w->st.size, std::memory_order_relaxed);
    const uint32_t fs = filesystems.Of(w->st.dev, fd, w->path, w->root);  // before mapping: see Filesystems
    std::vector<FiemapExtent> extents;
    const bool mapped = sys.Fiemap(fd, &extents).ok();
    const uint32_t flags = sys.InodeFlags(fd);
    for (const auto& e : extents)
      if (!(e.flags & (kExtentInline | kExtentDelalloc | kExtentUnknown))) {
        w->first_physical = e.physical;
        break;
      }
    if (w->st.nlink > 1) return false;  // hardlinks are merged after the walk
    FileEntry e = EntryOf(*w, fs);
    e.extents = std::move(extents);
    e.inode_flags = flags;
    const std::string key = filesystems.Key(fs);
    if (mapped && prev.Reuse(key, &e)) {
      sink.Add(std::move(e), walked_bytes.load(), found.load());
      return true;
    }
    if (!read_in_walk) return false;
    thread_local std::vector<char> buffer;
    if (ReadOpen(sys, fd, mapped, key, prev, o, &buffer, &bytes_read, &e))
      sink.Add(std::move(e), walked_bytes.load(), found.load());
    return true;
  };
  // Unchanged files are finished from one stat by name, without opening them, when
  // their extent map cannot have changed either: btrfs wrote none of their metadata
  // since the previous scan, or they held only inline data.
  std::atomic<uint64_t> unopened{0};
  if (!o.previous.empty())
    wo.without_open = [&](int dirfd, const std::string& name, uint64_t ino, WalkEntry* w) -> bool {
      if (o.stop && o.stop->load()) return false;
      // The directory's filesystem is the file's but for a mount on the file itself,
      // which the stat below catches: files that will be opened anyway skip the stat.
      const uint32_t dir_fs = filesystems.Of(w->st.dev, -1, w->path, w->root);
      if (!prev.MayFinishUnopened(filesystems.Key(dir_fs), ino, filesystems.UnchangedExtents(dir_fs, ino)))
        return false;
      auto st = sys.StatAt(dirfd, name);
      if (!st.ok() || !S_ISREG(st->mode) || st->nlink > 1 || st->size == 0 || st->size < o.min_size) return false;
      w->st = *st;
      const uint32_t fs = filesystems.Of(st->dev, -1, w->path, w->root);
      FileEntry e = EntryOf(*w, fs);
      if (!prev.Reuse(filesystems.Key(fs), &e, true, filesystems.UnchangedExtents(fs, st->ino))) return false;
      unopened.fetch_add(1, std::memory_order_relaxed);
      walked_bytes.fetch_add(st->size, std::memory_order_relaxed);
      sink.Add(std::move(e), walked_bytes.load(), found.load());
      return true;
    };
  tbb::global_control allow_walkers(tbb::global_control::max_allowed_parallelism,
                                    size_t(std::max<int>(wo.threads, int(std::thread::hardware_concurrency()))));
  auto walked = Walk(sys, header.roots, wo);
  if (!walked.ok()) return walked.status();
  OANS_RETURN_IF_ERROR(sink.status());
  WalkResult& w = *walked;
  stats->unopened = unopened.load();
  stats->dirs = w.dirs;
  stats->skipped_special = w.skipped_special;
  stats->skipped_symlinks = w.skipped_symlinks;
  stats->skipped_mounts = w.skipped_mounts;
  stats->skipped_small = w.skipped_small;
  stats->excluded = w.excluded;
  observer->Progress({"walk", walked_bytes.load(), walked_bytes.load(), found.load(), found.load()});  // exact now

  // Hardlinks: one record per inode, the smallest path first, the others alongside.
  // An index is sorted rather than the entries themselves, so each entry moves once.
  std::vector<uint32_t> by_inode(w.files.size());
  for (uint32_t i = 0; i < by_inode.size(); ++i) by_inode[i] = i;
  std::sort(by_inode.begin(), by_inode.end(), [&](uint32_t x, uint32_t y) {
    const WalkEntry &a = w.files[x], &b = w.files[y];
    return std::tie(a.st.dev, a.st.ino, a.path) < std::tie(b.st.dev, b.st.ino, b.path);
  });
  std::vector<Candidate> cands;
  cands.reserve(w.files.size());
  for (uint32_t i : by_inode) {
    WalkEntry& f = w.files[i];
    if (!cands.empty() && cands.back().entry.st.dev == f.st.dev && cands.back().entry.st.ino == f.st.ino) {
      cands.back().other_paths.push_back(std::move(f.path));
      stats->hardlinks++;
      continue;
    }
    cands.emplace_back();
    cands.back().entry = std::move(f);
  }
  std::vector<uint32_t>().swap(by_inode);
  std::vector<WalkEntry>().swap(w.files);
  for (auto& c : cands) c.fs = filesystems.Of(c.entry.st.dev, -1, c.entry.path, c.entry.root);
  if (stats->order == ReadOrder::kPhysical)
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.entry.first_physical, a.entry.st.ino) < std::tie(b.entry.first_physical, b.entry.st.ino);
    });
  // Inode order (and hardlinks in walk order) needs nothing: the merge sorted by inode.

  header.filesystems = filesystems.list();
  if (header.filesystems.empty()) {
    FsRecord r;
    r.uuid = "none";
    header.filesystems.push_back(r);
  }
  IndexWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(header));
  OANS_RETURN_IF_ERROR(sink.CopyInto(&writer));

  // Readers wait on I/O, so there may be more of them than cores.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism,
                            size_t(std::max<int>(stats->threads, int(std::thread::hardware_concurrency()))));
  tbb::task_arena arena(stats->threads);
  uint64_t total_bytes = 0;
  for (auto& c : cands) total_bytes += c.entry.st.size;
  uint64_t bytes_done = 0;
  Status write_status;
  size_t next = 0;
  auto last_progress = std::chrono::steady_clock::now();
  struct Item {
    size_t i;
    FileEntry e;
    bool finished = true;  // false: stopped while reading it, not recorded
  };
  arena.execute([&] {
    tbb::parallel_pipeline(
        size_t(stats->threads) * 2,
        tbb::make_filter<void, size_t>(tbb::filter_mode::serial_in_order,
                                       [&](tbb::flow_control& fc) -> size_t {
                                         if (next >= cands.size() || !write_status.ok() ||
                                             (o.stop && o.stop->load())) {
                                           fc.stop();
                                           return 0;
                                         }
                                         return next++;
                                       }) &
            tbb::make_filter<size_t, Item*>(tbb::filter_mode::parallel,
                                            [&](size_t i) -> Item* {
                                              thread_local std::vector<char> buffer;
                                              Candidate& c = cands[i];
                                              auto* it = new Item{i, EntryOf(c.entry, c.fs)};
                                              it->e.other_paths = std::move(c.other_paths);
                                              auto fd = sys.OpenNoFollow(c.entry.path);
                                              if (!fd.ok()) {
                                                Fail(&it->e, fd.status());
                                                return it;
                                              }
                                              it->finished = ReadOpen(sys, *fd, false, filesystems.Key(c.fs), prev,
                                                                      o, &buffer, &bytes_read, &it->e);
                                              sys.Close(*fd);
                                              return it;
                                            }) &
            tbb::make_filter<Item*, void>(tbb::filter_mode::serial_in_order, [&](Item* it) {
              std::unique_ptr<Item> own(it);
              bytes_done += cands[it->i].entry.st.size;
              if (!it->finished) return;
              if (it->e.reused) stats->reused++;
              else if (it->e.hashed) stats->hashed++;
              if (!it->e.error.empty()) {
                stats->errors++;
                observer->Notice(it->e.path + ": " + it->e.error);
              }
              stats->files++;
              stats->bytes += it->e.size;
              if (write_status.ok()) write_status = writer.Add(std::move(it->e));
              auto now = std::chrono::steady_clock::now();
              if (now - last_progress > std::chrono::milliseconds(200)) {
                last_progress = now;
                observer->Progress({"hash", bytes_done, total_bytes, stats->files, found.load()});
              }
            }));
  });
  stats->bytes_read = bytes_read.load();
  OANS_RETURN_IF_ERROR(write_status);
  // Directories that could not be read are recorded as errors too, so they are counted.
  for (auto& p : w.problems) {
    if (o.stop && o.stop->load()) break;
    FileEntry e;
    e.path = p.path;
    e.error = p.status.message();
    e.errnum = p.status.errnum();
    stats->errors++;
    stats->files++;
    observer->Notice(p.path + ": " + p.status.message());
    OANS_RETURN_IF_ERROR(writer.Add(std::move(e)));
  }
  if (!cands.empty()) observer->Progress({"hash", bytes_done, total_bytes, stats->files, found.load()});
  if (o.stop && o.stop->load()) {
    stats->interrupted = true;
    OANS_RETURN_IF_ERROR(writer.Flush());
    return Status::Interrupted("scan interrupted");
  }
  return writer.Finish();
}

}  // namespace oans
