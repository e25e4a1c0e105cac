#include "lib/scan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "lib/hasher.h"
#include "lib/version.h"
#include "lib/walk.h"

namespace oans {
namespace {

struct Candidate {
  WalkEntry entry;  // with its extents and inode flags when the walk could map it
  std::vector<std::string> other_paths;
  uint32_t fs = 0;
  uint64_t first_physical = UINT64_MAX;
};

struct PrevKey {
  std::string fs;
  uint64_t ino;
  bool operator==(const PrevKey&) const = default;
};
struct PrevKeyHash {
  size_t operator()(const PrevKey& k) const { return std::hash<std::string>()(k.fs) * 31 + std::hash<uint64_t>()(k.ino); }
};
struct PrevEntry {
  FileIdentity id;
  Hash128 hash;
  std::vector<Hash128> blocks;
};

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Reads a file and fills its record. Never fails: problems become the record's error.
FileEntry ReadOne(Sys& sys, Candidate& c, const ScanOptions& o, const IndexHeader& header,
                  const std::unordered_map<PrevKey, PrevEntry, PrevKeyHash>& prev, std::vector<char>* buffer,
                  std::atomic<uint64_t>* bytes_read, bool* reused) {
  FileEntry e;
  e.path = c.entry.path;
  e.fs = c.fs;
  e.dev = c.entry.st.dev;
  e.ino = c.entry.st.ino;
  e.size = c.entry.st.size;
  e.mtime_ns = c.entry.st.mtime_ns;
  e.ctime_ns = c.entry.st.ctime_ns;
  e.nlink = c.entry.st.nlink;
  e.other_paths = std::move(c.other_paths);
  // Unchanged since the previous index and mapped by the walk: nothing to open.
  auto p = prev.find(PrevKey{header.filesystems[c.fs].Key(), e.ino});
  const bool unchanged = p != prev.end() && FileIdentity::Of(e).UnchangedFrom(p->second.id);
  if (unchanged && c.entry.mapped) {
    e.extents = std::move(c.entry.extents);
    e.inode_flags = c.entry.inode_flags;
    e.hash = p->second.hash;
    e.block_hashes = p->second.blocks;
    e.hashed = true;
    e.reused = true;
    *reused = true;
    return e;
  }
  auto fail = [&](const Status& s) {
    e.error = s.message();
    e.errnum = s.errnum();
    e.hashed = false;
    e.block_hashes.clear();
    return e;
  };
  auto fd = sys.OpenNoFollow(c.entry.path);
  if (!fd.ok()) return fail(fd.status());
  struct Closer {
    Sys& s;
    int fd;
    ~Closer() { s.Close(fd); }
  } closer{sys, *fd};
  auto st = sys.Fstat(*fd);
  if (!st.ok()) return fail(st.status());
  if (st->dev != c.entry.st.dev || st->ino != c.entry.st.ino || !S_ISREG(st->mode))
    return fail(Status::Mismatch("replaced by another file since the walk"));
  e.size = st->size;
  e.mtime_ns = st->mtime_ns;
  e.ctime_ns = st->ctime_ns;
  e.nlink = st->nlink;
  if (c.entry.mapped) {
    e.inode_flags = c.entry.inode_flags;
    e.extents = std::move(c.entry.extents);
  } else {
    e.inode_flags = sys.InodeFlags(*fd);
    std::vector<FiemapExtent> ext;
    Status fs = sys.Fiemap(*fd, &ext);
    if (fs.ok()) e.extents = std::move(ext);  // no extent map is not fatal: nothing is shared then
  }
  if (e.size == 0) return fail(Status::Mismatch("became empty since the walk"));
  if (p != prev.end() && FileIdentity::Of(e).UnchangedFrom(p->second.id)) {
    e.hash = p->second.hash;
    e.block_hashes = p->second.blocks;
    e.hashed = true;
    e.reused = true;
    *reused = true;
    return e;
  }
  auto h = HashFile(sys, *fd, e.size, o.block_size, buffer,
                    [](void* ctx, uint64_t n) { static_cast<std::atomic<uint64_t>*>(ctx)->fetch_add(n); },
                    bytes_read);
  if (!h.ok()) return fail(h.status());
  auto after = sys.Fstat(*fd);
  if (!after.ok()) return fail(after.status());
  if (after->size != e.size || after->mtime_ns != e.mtime_ns || after->ctime_ns != e.ctime_ns)
    return fail(Status::Mismatch("changed while being read"));
  e.hash = h->whole;
  e.block_hashes = std::move(h->blocks);
  e.hashed = true;
  return e;
}

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

  // Previous index: hashes keyed by (filesystem, inode).
  std::unordered_map<PrevKey, PrevEntry, PrevKeyHash> prev;
  if (!o.previous.empty()) {
    IndexReadOptions ro;
    ro.allow_truncated = true;
    auto r = ReadIndex(
        o.previous, ro, [](const IndexHeader&) { return Status::Ok(); },
        [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
          if (h.block_size != o.block_size) return Status::Ok();  // other block size: nothing reusable
          for (auto& f : batch) {
            if (!f.hashed) continue;
            prev[PrevKey{h.filesystems[f.fs].Key(), f.ino}] =
                PrevEntry{FileIdentity::Of(f), f.hash, std::move(f.block_hashes)};
          }
          return Status::Ok();
        });
    if (!r.ok()) return r.status().Prepend("--previous");
    stats->previous_files = prev.size();
    stats->previous_truncated = r->truncated;
    if (r->truncated)
      observer->Notice("warning: " + o.previous + " is incomplete (an interrupted scan); reusing the " +
                       std::to_string(prev.size()) + " files it holds");
  }

  // Walk.
  std::atomic<uint64_t> found{0};
  WalkOptions wo;
  wo.excludes = o.excludes;
  wo.min_size = o.min_size;
  wo.threads = o.io_threads > 0 ? o.io_threads : 8;
  wo.files_found = &found;
  // Map each file while the walk has it open: no second lookup, and the read order
  // (physical offset of the first extent) is known before any data is read.
  wo.on_file = [&sys](int fd, WalkEntry* e) {
    e->mapped = sys.Fiemap(fd, &e->extents).ok();
    e->inode_flags = sys.InodeFlags(fd);
  };
  tbb::global_control allow_walkers(tbb::global_control::max_allowed_parallelism,
                                    size_t(std::max<int>(wo.threads, int(std::thread::hardware_concurrency()))));
  auto walked = Walk(sys, header.roots, wo);
  if (!walked.ok()) return walked.status();
  WalkResult& w = *walked;
  stats->dirs = w.dirs;
  stats->skipped_special = w.skipped_special;
  stats->skipped_symlinks = w.skipped_symlinks;
  stats->skipped_mounts = w.skipped_mounts;
  stats->skipped_small = w.skipped_small;
  stats->excluded = w.excluded;
  observer->Progress({"walk", 0, 0, w.files.size(), w.files.size()});

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

  // Filesystems: identify each st_dev once through one of its files.
  std::map<uint64_t, uint32_t> fs_of_dev;
  std::map<std::string, uint32_t> fs_of_key;
  std::vector<std::string> devices;
  for (auto& c : cands) {
    auto it = fs_of_dev.find(c.entry.st.dev);
    if (it != fs_of_dev.end()) {
      c.fs = it->second;
      continue;
    }
    auto fd = sys.OpenNoFollow(c.entry.path);
    if (!fd.ok()) continue;  // identified later through another file, or recorded as error
    auto id = sys.Identify(*fd);
    sys.Close(*fd);
    if (!id.ok()) continue;
    FsRecord r;
    r.uuid = id->uuid;
    r.subvolume = id->subvolume;
    r.dev = c.entry.st.dev;
    r.type = id->type;
    r.block_size = id->block_size;
    r.mount_point = header.roots[c.entry.root];
    header.filesystems.push_back(r);
    uint32_t idx = uint32_t(header.filesystems.size() - 1);
    fs_of_dev[c.entry.st.dev] = idx;
    c.fs = idx;
    for (auto& d : id->devices)
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  // Files whose filesystem could not be identified keep their own unpaired entry.
  for (auto& c : cands) {
    if (fs_of_dev.count(c.entry.st.dev)) {
      c.fs = fs_of_dev[c.entry.st.dev];
      continue;
    }
    FsRecord r;
    r.uuid = "unknown-dev-" + std::to_string(c.entry.st.dev);
    r.dev = c.entry.st.dev;
    header.filesystems.push_back(r);
    fs_of_dev[c.entry.st.dev] = c.fs = uint32_t(header.filesystems.size() - 1);
  }
  if (header.filesystems.empty()) {
    FsRecord r;
    r.uuid = "none";
    header.filesystems.push_back(r);
  }

  // Storage kind, threads and order.
  if (o.storage == StorageChoice::kAuto) {
    stats->storage = DetectStorage(devices);
  } else {
    stats->storage.kind = o.storage == StorageChoice::kHdd ? StorageKind::kHdd : StorageKind::kSsd;
    stats->storage.reason = "set by --storage";
  }
  const bool hdd = stats->storage.kind == StorageKind::kHdd;
  stats->threads = o.io_threads > 0 ? o.io_threads : (hdd ? 1 : 8);
  stats->order = o.order != ReadOrder::kAuto ? o.order : (hdd ? ReadOrder::kPhysical : ReadOrder::kInode);
  observer->Notice("storage: " + std::string(StorageKindName(stats->storage.kind)) + " (" +
                   stats->storage.reason + "); " + std::to_string(stats->threads) + " reader thread(s), " +
                   ReadOrderName(stats->order) + " order");

  // Readers wait on I/O, so there may be more of them than cores.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism,
                            size_t(std::max<int>(stats->threads, int(std::thread::hardware_concurrency()))));
  tbb::task_arena arena(stats->threads);
  if (stats->order == ReadOrder::kPhysical) {
    for (auto& c : cands)
      for (const auto& e : c.entry.extents)
        if (!(e.flags & (kExtentInline | kExtentDelalloc | kExtentUnknown))) {
          c.first_physical = e.physical;
          break;
        }
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.first_physical, a.entry.st.ino) < std::tie(b.first_physical, b.entry.st.ino);
    });
  }
  // Inode order needs nothing: the hardlink merge already sorted by (dev, inode).

  IndexWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(header));
  uint64_t total_bytes = 0;
  for (auto& c : cands) total_bytes += c.entry.st.size;
  std::atomic<uint64_t> bytes_read{0};
  uint64_t bytes_done = 0;
  Status write_status;
  size_t next = 0;
  auto last_progress = std::chrono::steady_clock::now();
  struct Item {
    size_t i;
    FileEntry e;
    bool reused = false;
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
                                              auto* it = new Item{i, {}};
                                              it->e = ReadOne(sys, cands[i], o, header, prev, &buffer,
                                                              &bytes_read, &it->reused);
                                              return it;
                                            }) &
            tbb::make_filter<Item*, void>(tbb::filter_mode::serial_in_order, [&](Item* it) {
              std::unique_ptr<Item> own(it);
              bytes_done += cands[it->i].entry.st.size;
              if (it->reused) stats->reused++;
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
                observer->Progress({"hash", bytes_done, total_bytes, stats->files, cands.size()});
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
  observer->Progress({"hash", bytes_done, total_bytes, stats->files, cands.size()});
  if (o.stop && o.stop->load()) {
    stats->interrupted = true;
    OANS_RETURN_IF_ERROR(writer.Flush());
    return Status::Interrupted("scan interrupted");
  }
  return writer.Finish();
}

}  // namespace oans
