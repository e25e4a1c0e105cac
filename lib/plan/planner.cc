#include "lib/plan/planner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>

#include <xxhash.h>

#include "lib/base/spill.h"
#include "lib/base/version.h"

namespace oans {
namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;  // FS_NOCOW_FL
constexpr uint32_t kUnusableExtent = kExtentInline | kExtentDelalloc | kExtentUnknown;

bool SameMapping(const FiemapExtent& a, const FiemapExtent& b) {
  if ((a.flags | b.flags) & kUnusableExtent) return false;
  if ((a.flags | b.flags) & kExtentEncoded) return a.physical == b.physical && a.logical == b.logical;
  return a.physical - a.logical == b.physical - b.logical;
}

// What the plan needs of a file beyond its sort keys. Kept in a RecordStore (memory,
// then a temporary file), looked up by file id. Paths, needed only for the files a plan
// names and for reports, are kept apart.
struct Detail {
  uint64_t path_at = 0;  // offset of the path in the path store
  uint32_t fs = 0;  // index into the plan's filesystems (uuid + subvolume)
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
  uint64_t first_physical = UINT64_MAX;  // PhysicalAt(extents, 0)
  std::vector<FiemapExtent> extents;  // sorted by logical offset
};

// A detail record: varints (LEB128), the mtime as 8 bytes, and each extent as its
// distance from where the previous one ended (logical and physical, zigzag: contiguous
// fragments cost a byte), length and flags. About a third of the fixed layout's size.
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(char(v | 0x80));
    v >>= 7;
  }
  out->push_back(char(v));
}
uint64_t Zigzag(uint64_t delta) { return (delta << 1) ^ uint64_t(int64_t(delta) >> 63); }
uint64_t Unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

void EncodeDetail(const Detail& d, std::string* out) {
  out->clear();
  PutVarint(out, d.fs);
  PutVarint(out, d.dev);
  PutVarint(out, d.ino);
  PutVarint(out, d.size);
  char mtime[sizeof d.mtime_ns];
  std::memcpy(mtime, &d.mtime_ns, sizeof mtime);
  out->append(mtime, sizeof mtime);
  PutVarint(out, d.path_at);
  PutVarint(out, d.extents.size());
  uint64_t logical = 0, physical = 0;  // where the previous extent ended
  for (const auto& e : d.extents) {
    PutVarint(out, Zigzag(e.logical - logical));
    PutVarint(out, Zigzag(e.physical - physical));
    PutVarint(out, e.length);
    PutVarint(out, e.flags);
    logical = e.logical + e.length;
    physical = e.physical + e.length;
  }
}

Status DecodeDetail(std::string_view in, Detail* d) {
  const char* p = in.data();
  const char* const end = p + in.size();
  bool ok = true;
  auto get = [&]() -> uint64_t {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = uint8_t(*p++);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  };
  const uint64_t fs = get();
  d->fs = uint32_t(fs);
  d->dev = get();
  d->ino = get();
  d->size = get();
  if (!ok || fs > UINT32_MAX || end - p < ptrdiff_t(sizeof d->mtime_ns))
    return Status::Corrupt("planner: damaged file record in the temporary store");
  std::memcpy(&d->mtime_ns, p, sizeof d->mtime_ns);
  p += sizeof d->mtime_ns;
  d->path_at = get();
  const uint64_t n = get();
  if (!ok || n > uint64_t(end - p) / 4) return Status::Corrupt("planner: damaged file record in the temporary store");
  d->extents.resize(size_t(n));
  uint64_t logical = 0, physical = 0;
  for (auto& e : d->extents) {
    e.logical = logical + Unzigzag(get());
    e.physical = physical + Unzigzag(get());
    e.length = get();
    const uint64_t flags = get();
    e.flags = uint32_t(flags);
    if (flags > UINT32_MAX) ok = false;
    logical = e.logical + e.length;
    physical = e.physical + e.length;
  }
  if (!ok || p != end) return Status::Corrupt("planner: damaged file record in the temporary store");
  d->first_physical = PhysicalAt(d->extents, 0);
  return Status::Ok();
}

// File details by id, with a small cache of recent lookups. Before a stage that needs
// the details (or paths) of many files in an order unlike the ids, Preload fetches the
// records of those files in one sequential pass into memory, within a budget; the rest
// are read one by one.
class Details {
 public:
  Details(const std::string& dir, uint64_t budget, uint64_t path_budget) : store_(dir, budget), paths_(dir, path_budget) {}
  Result<uint32_t> Add(Detail& d, const std::string& path) {
    auto p = paths_.Add(path);
    if (!p.ok()) return p.status();
    d.path_at = *p;
    EncodeDetail(d, &encoded_);
    auto at = store_.Add(encoded_);
    if (!at.ok()) return at.status();
    offsets_.push_back(*at);
    return uint32_t(offsets_.size() - 1);
  }
  size_t size() const { return offsets_.size(); }
  Result<std::shared_ptr<const Detail>> Get(uint32_t id) {
    auto it = cache_.find(id);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kCache) cache_.clear();
    if (!details_.Find(id, &scratch_)) OANS_RETURN_IF_ERROR(store_.Get(offsets_[id], &scratch_));
    auto d = std::make_shared<Detail>();
    OANS_RETURN_IF_ERROR(DecodeDetail(scratch_, d.get()));
    cache_.emplace(id, d);
    return std::shared_ptr<const Detail>(d);
  }
  Result<std::string> Path(uint32_t id) {
    std::string path;
    if (paths_pre_.Find(id, &path)) return path;
    auto d = Get(id);
    if (!d.ok()) return d.status();
    OANS_RETURN_IF_ERROR(paths_.Get((*d)->path_at, &path));
    return path;
  }
  // Keeps the details (and, with `paths`, the paths) of the files marked in `needed` in
  // memory, as far as `budget` bytes go. Records of both stores are in id order.
  Status Preload(const std::vector<bool>& needed, uint64_t budget, bool paths) {
    cache_.clear();
    details_ = Preloaded();
    paths_pre_ = Preloaded();
    const bool details = store_.spilled();  // else they are in memory already
    if (details) OANS_RETURN_IF_ERROR(details_.Load(store_, needed, paths ? budget / 2 : budget));
    if (paths) OANS_RETURN_IF_ERROR(paths_pre_.Load(paths_, needed, details ? budget / 2 : budget));
    return Status::Ok();
  }
  bool spilled() const { return store_.spilled(); }
  // Visits every file's details in id order, in one sequential pass.
  Status ForEach(const std::function<Status(uint32_t id, const Detail&)>& visit) const {
    uint32_t id = 0;
    Detail d;
    return store_.ForEach([&](uint64_t, const std::string& record) -> Status {
      OANS_RETURN_IF_ERROR(DecodeDetail(record, &d));
      return visit(id++, d);
    });
  }

 private:
  struct Preloaded {
    std::string arena;
    std::vector<std::pair<uint32_t, uint64_t>> index;  // id -> offset in arena, ids ascending
    Status Load(const RecordStore& store, const std::vector<bool>& needed, uint64_t budget) {
      arena.clear();
      index.clear();
      std::string().swap(arena);
      std::vector<std::pair<uint32_t, uint64_t>>().swap(index);
      uint32_t id = 0;
      return store.ForEach([&](uint64_t, const std::string& record) -> Status {
        const uint32_t i = id++;
        if (i >= needed.size() || !needed[i]) return Status::Ok();
        if (arena.size() + record.size() + sizeof(uint32_t) + index.size() * 12 > budget) return Status::Ok();
        index.push_back({i, arena.size()});
        const uint32_t n = uint32_t(record.size());
        arena.append(reinterpret_cast<const char*>(&n), sizeof n);
        arena.append(record);
        return Status::Ok();
      });
    }
    bool Find(uint32_t id, std::string* record) const {
      auto it = std::lower_bound(index.begin(), index.end(), std::pair<uint32_t, uint64_t>{id, 0});
      if (it == index.end() || it->first != id) return false;
      uint32_t n = 0;
      std::memcpy(&n, arena.data() + it->second, sizeof n);
      record->assign(arena, size_t(it->second + sizeof n), n);
      return true;
    }
  };
  static constexpr size_t kCache = 1024;
  RecordStore store_, paths_;
  ChunkedArray<uint64_t> offsets_;
  std::unordered_map<uint32_t, std::shared_ptr<const Detail>> cache_;
  Preloaded details_, paths_pre_;
  std::string scratch_, encoded_;
};

// Sort keys. Each stage streams one sorted sequence and feeds the next.
struct WholeKey {  // whole-file grouping: equal pair, size and hash; members in id order
  uint32_t pair, id;
  uint64_t size;
  Hash128 hash;
  uint64_t layout;  // hash of the extent list, 0 when empty or unusable: equal = sharing it all
};

// Whether `logical` lies in written data: not a hole, not inline or unknown, and not a
// preallocated (unwritten) extent, which reads as zeros and has nothing to share.
bool Written(const std::vector<FiemapExtent>& extents, uint64_t logical) {
  auto it = std::upper_bound(extents.begin(), extents.end(), logical,
                             [](uint64_t l, const FiemapExtent& e) { return l < e.logical; });
  if (it == extents.begin()) return false;
  --it;
  return logical < it->logical + it->length && !(it->flags & (kUnusableExtent | kExtentUnwritten));
}

uint64_t LayoutOf(const std::vector<FiemapExtent>& extents) {
  if (extents.empty()) return 0;
  std::vector<uint64_t> v;
  v.reserve(extents.size() * 3);
  for (const auto& e : extents) {
    if (e.flags & kUnusableExtent) return 0;
    v.insert(v.end(), {e.logical, e.physical, e.length});
  }
  const uint64_t h = XXH3_64bits(v.data(), v.size() * sizeof(uint64_t));
  return h ? h : 1;
}
struct WholeLess {
  bool operator()(const WholeKey& a, const WholeKey& b) const {
    return std::tie(a.pair, a.size, a.hash, a.id) < std::tie(b.pair, b.size, b.hash, b.id);
  }
};
struct InodeKey {  // one record per (filesystem, inode) across indexes
  uint64_t ino;
  uint32_t fs_key, id;
};
struct InodeLess {
  bool operator()(const InodeKey& a, const InodeKey& b) const {
    return std::tie(a.fs_key, a.ino, a.id) < std::tie(b.fs_key, b.ino, b.id);
  }
};
struct BlockKey {  // block grouping: equal pair and block hash
  Hash128 hash;
  uint32_t pair, file, blk, unused;
  uint64_t physical, physical_end;  // of the block's first and last byte (UINT64_MAX: none)
};
struct BlockLess {
  bool operator()(const BlockKey& x, const BlockKey& y) const {
    return std::tie(x.pair, x.hash, x.file, x.blk) < std::tie(y.pair, y.hash, y.file, y.blk);
  }
};
struct PairKey {  // one identical block of a source and a destination
  uint32_t src, dst, sblk, dblk;
  int64_t delta() const { return int64_t(dblk) - int64_t(sblk); }
};
struct PairLess {
  bool operator()(const PairKey& x, const PairKey& y) const {
    return std::make_tuple(x.src, x.dst, x.delta(), x.sblk) < std::make_tuple(y.src, y.dst, y.delta(), y.sblk);
  }
};
struct RunKey {  // a run of identical blocks
  uint32_t src, dst;
  uint64_t offset, length, dst_offset;
};
struct RunLess {
  bool operator()(const RunKey& a, const RunKey& b) const {
    return std::tie(a.src, a.offset, a.length, a.dst, a.dst_offset) <
           std::tie(b.src, b.offset, b.length, b.dst, b.dst_offset);
  }
};
struct OpKey {  // an operation, by the source's physical offset
  uint64_t physical, offset, length, seq;
  // Its one destination; with several, `dest_offset` is where the operation is in the
  // operation store.
  uint64_t dest_offset, dest_physical;
  uint32_t source, dests, dest;
  uint64_t stored() const { return dest_offset; }
  uint64_t bytes() const { return length * (1 + uint64_t(dests)); }  // read by the operation
};
struct OpLess {
  bool operator()(const OpKey& a, const OpKey& b) const {
    return std::tie(a.physical, a.source, a.offset, a.seq) < std::tie(b.physical, b.source, b.offset, b.seq);
  }
};

struct Unit {
  uint32_t src = 0;
  uint64_t offset = 0, length = 0;
  std::vector<PlanDest> dests;  // file = file id, physical filled later
};

std::string EncodeOp(const PlanOp& op) {
  std::string out;
  auto put = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(op.source);
  put(op.offset);
  put(op.length);
  put(op.physical);
  put(uint32_t(op.dests.size()));
  for (const auto& d : op.dests) {
    put(d.file);
    put(d.offset);
    put(d.physical);
  }
  return out;
}

Status DecodeOp(const std::string& in, PlanOp* op) {
  size_t pos = 0;
  bool ok = true;
  auto get = [&](auto* v) {
    if (pos + sizeof *v > in.size()) {
      ok = false;
      return;
    }
    std::memcpy(v, in.data() + pos, sizeof *v);
    pos += sizeof *v;
  };
  uint32_t n = 0;
  get(&op->source);
  get(&op->offset);
  get(&op->length);
  get(&op->physical);
  get(&n);
  if (!ok || n > kMaxDedupeDests) return Status::Corrupt("planner: damaged operation in the temporary store");
  op->dests.resize(n);
  for (auto& d : op->dests) {
    get(&d.file);
    get(&d.offset);
    get(&d.physical);
  }
  return ok ? Status::Ok() : Status::Corrupt("planner: damaged operation in the temporary store");
}

// The planner's state between stages; memory is bounded by PlanOptions::memory plus a
// few bytes per file (a detail offset and three flags).
class Planner {
 public:
  Planner(const PlanOptions& o, Observer* observer, PlanStats* stats)
      : o_(o),
        observer_(observer),
        stats_(stats),
        dir_(TempDirectory(o.temp_dir)),
        details_(dir_, o.memory / 4, std::min<uint64_t>(o.memory / 64, 2u << 20)),
        whole_(dir_, o.memory / 5),
        inodes_(dir_, o.memory / 10),
        blocks_(dir_, o.memory / 5),
        ops_(dir_, o.memory / 4),
        op_store_(dir_, o.memory / 10) {}

  Status Run(OutputFile* out, std::vector<GroupReport>* reports);

 private:
  Status Load();
  Status LoadSince(std::unordered_map<std::string, std::unordered_map<uint64_t, FileIdentity>>* old);
  Status DropDuplicateInodes();
  Status PlanWholeFiles(std::vector<GroupReport>* reports);
  Status WholeGroup(const std::vector<uint32_t>& ids, std::vector<GroupReport>* reports);
  Status PlanBlocks();
  Status AddOps(const Unit& u);
  Status WriteRounds(OutputFile* out);

  const PlanOptions& o_;
  Observer* observer_;
  PlanStats* stats_;
  std::string dir_;
  PlanHeader header_;
  Details details_;
  int sections_ = 0;  // index sections read; with one, no inode can appear twice
  std::vector<bool> changed_, dropped_, is_dest_, op_files_;
  ExternalSorter<WholeKey, WholeLess> whole_;
  ExternalSorter<InodeKey, InodeLess> inodes_;
  ExternalSorter<BlockKey, BlockLess> blocks_;
  ExternalSorter<OpKey, OpLess> ops_;
  RecordStore op_store_;
};

Status Planner::LoadSince(std::unordered_map<std::string, std::unordered_map<uint64_t, FileIdentity>>* old) {
  IndexReadOptions ro;
  ro.allow_truncated = true;
  auto r = ReadIndex(
      o_.since, ro, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
        for (auto& e : batch)
          if (e.hashed) (*old)[h.filesystems[e.fs].Key()][e.ino] = FileIdentity::Of(e);
        return Status::Ok();
      });
  if (!r.ok()) return r.status().Prepend("--since");
  stats_->since_truncated = r->truncated;
  if (r->truncated) observer_->Notice("warning: " + o_.since + " is incomplete; files missing from it count as new");
  return Status::Ok();
}

// Reads every index once: details to the store, keys to the sorters.
Status Planner::Load() {
  std::unordered_map<std::string, std::unordered_map<uint64_t, FileIdentity>> old;
  if (!o_.since.empty()) OANS_RETURN_IF_ERROR(LoadSince(&old));
  std::map<std::string, uint32_t> fs_index;    // uuid/subvolume -> plan filesystem
  std::map<std::string, uint32_t> pair_index;  // uuid -> pairing id
  std::vector<uint32_t> remap, pairs_of_section;
  std::vector<const std::unordered_map<uint64_t, FileIdentity>*> old_of_section;
  uint64_t loaded = 0, loaded_bytes = 0;
  for (const auto& path : o_.indexes) {
    auto r = ReadIndex(
        path, IndexReadOptions{},
        [&](const IndexHeader& h) {
          if (header_.block_size == 0 || header_.indexes.empty()) header_.block_size = h.block_size;
          if (h.block_size != header_.block_size)
            return Status::Invalid(path + " was scanned with --block-size " + std::to_string(h.block_size) +
                                   " but another index with " + std::to_string(header_.block_size) +
                                   "; scan them with the same block size");
          for (const auto& root : h.roots)
            if (std::find(header_.roots.begin(), header_.roots.end(), root) == header_.roots.end())
              header_.roots.push_back(root);
          // From the second section on, the same inode may come again: the files read
          // so far get their inode keys now, the rest as they come.
          if (++sections_ == 2)
            OANS_RETURN_IF_ERROR(details_.ForEach(
                [&](uint32_t id, const Detail& d) { return inodes_.Add({d.ino, d.fs, id}); }));
          remap.clear();
          pairs_of_section.clear();
          old_of_section.clear();
          for (const auto& f : h.filesystems) {
            auto it = fs_index.find(f.Key());
            if (it == fs_index.end()) {
              header_.filesystems.push_back(f);
              it = fs_index.emplace(f.Key(), uint32_t(header_.filesystems.size() - 1)).first;
            }
            remap.push_back(it->second);
            auto p = pair_index.emplace(f.uuid, uint32_t(pair_index.size())).first;
            pairs_of_section.push_back(p->second);
            auto o = old.find(f.Key());
            old_of_section.push_back(o == old.end() ? nullptr : &o->second);
          }
          if (std::find(header_.indexes.begin(), header_.indexes.end(), path) == header_.indexes.end())
            header_.indexes.push_back(path);
          return Status::Ok();
        },
        [&](const IndexHeader&, std::vector<FileEntry>& batch) -> Status {
          loaded += batch.size();
          for (const auto& e : batch) loaded_bytes += e.size;
          observer_->Progress({"load", loaded_bytes, 0, loaded, 0});
          for (auto& e : batch) {
            if (!e.error.empty() || !e.hashed) {
              stats_->skipped_errors++;
              continue;
            }
            bool inline_data = false;
            for (const auto& x : e.extents)
              if (x.flags & kExtentInline) inline_data = true;
            if (inline_data) {
              stats_->skipped_inline++;
              continue;
            }
            Detail d;
            d.fs = remap[e.fs];
            d.dev = e.dev;
            d.ino = e.ino;
            d.size = e.size;
            d.mtime_ns = e.mtime_ns;
            d.extents = std::move(e.extents);
            std::sort(d.extents.begin(), d.extents.end(),
                      [](const FiemapExtent& a, const FiemapExtent& b) { return a.logical < b.logical; });
            auto id = details_.Add(d, e.path);
            if (!id.ok()) return id.status();
            // btrfs refuses to share between nodatacow and ordinary files: never pair them.
            const uint32_t pair = pairs_of_section[e.fs] * 2 + ((e.inode_flags & kNoCowFlag) ? 1 : 0);
            bool changed = true;
            if (const auto* o = old_of_section[e.fs]) {
              auto it = o->find(e.ino);
              if (it != o->end() && FileIdentity::Of(e).UnchangedFrom(it->second)) changed = false;
            }
            changed_.push_back(changed);
            OANS_RETURN_IF_ERROR(whole_.Add({pair, *id, d.size, e.hash, LayoutOf(d.extents)}));
            if (sections_ > 1) OANS_RETURN_IF_ERROR(inodes_.Add({d.ino, d.fs, *id}));
            if (o_.blocks) {
              const uint64_t full = d.size / header_.block_size;
              for (uint64_t b = 0; b < full && b < e.block_hashes.size(); ++b) {
                const uint64_t at = b * header_.block_size;
                const uint64_t last = at + header_.block_size - 1;
                if (!Written(d.extents, at) || !Written(d.extents, last)) continue;  // nothing to share
                const uint64_t p = PhysicalAt(d.extents, at);
                OANS_RETURN_IF_ERROR(
                    blocks_.Add({e.block_hashes[b], pair, *id, uint32_t(b), 0, p, PhysicalAt(d.extents, last)}));
              }
            }
            if (details_.size() == UINT32_MAX) return Status::Invalid("more than 4 billion files in one plan");
          }
          return Status::Ok();
        });
    if (!r.ok()) return r.status();
  }
  stats_->filesystems = pair_index.size();
  dropped_.assign(details_.size(), false);
  is_dest_.assign(details_.size(), false);
  op_files_.assign(details_.size(), false);
  return Status::Ok();
}

// The same inode seen twice (overlapping roots, an index given twice): the first wins.
Status Planner::DropDuplicateInodes() {
  stats_->files = details_.size();
  if (sections_ < 2) return Status::Ok();
  InodeKey last{0, UINT32_MAX, 0};
  OANS_RETURN_IF_ERROR(inodes_.Drain([&](const InodeKey& k) {
    if (k.fs_key == last.fs_key && k.ino == last.ino) {
      dropped_[k.id] = true;
      stats_->duplicate_inodes++;
    } else {
      last = k;
    }
    return Status::Ok();
  }));
  stats_->files = details_.size() - stats_->duplicate_inodes;
  return Status::Ok();
}

// Whole-file groups: equal filesystem, size and hash.
Status Planner::PlanWholeFiles(std::vector<GroupReport>* reports) {
  // Walks the groups: `visit(ids, one_layout, size)` for every group of two or more.
  // The last walk gives the keys' memory back as it goes.
  auto groups = [&](const std::function<Status(const std::vector<uint32_t>&, bool, uint64_t)>& visit, bool last) {
    std::vector<uint32_t> group;
    WholeKey head{};
    bool one_layout = true;
    uint64_t done = 0;
    const uint64_t total = whole_.size();
    auto flush = [&]() -> Status {
      Status s = group.size() >= 2 ? visit(group, one_layout, head.size) : Status::Ok();
      group.clear();
      return s;
    };
    auto each = [&](const WholeKey& k) -> Status {
      if (++done % 65536 == 0) observer_->Progress({"group", 0, 0, done, total});
      if (dropped_[k.id]) return Status::Ok();
      if (!group.empty() && !(k.pair == head.pair && k.size == head.size && k.hash == head.hash))
        OANS_RETURN_IF_ERROR(flush());
      if (group.empty()) {
        head = k;
        one_layout = k.layout != 0;
      } else if (k.layout != head.layout) {
        one_layout = false;
      }
      group.push_back(k.id);
      return Status::Ok();
    };
    OANS_RETURN_IF_ERROR(last ? whole_.Drain(each) : whole_.ForEach(each));
    return flush();
  };
  auto any_changed = [&](const std::vector<uint32_t>& ids) {
    for (uint32_t m : ids)
      if (changed_[m]) return true;
    return false;
  };
  // Groups where every member already shares one extent layout need no details.
  auto needs_details = [&](const std::vector<uint32_t>& ids, bool one_layout) {
    return !(one_layout && !reports) && any_changed(ids);
  };
  if (details_.spilled()) {
    // The details went to disk: fetch those the groups need in one sequential pass.
    std::vector<bool> needed(details_.size(), false);
    OANS_RETURN_IF_ERROR(groups([&](const std::vector<uint32_t>& ids, bool one_layout, uint64_t) {
      if (needs_details(ids, one_layout))
        for (uint32_t m : ids) needed[m] = true;
      return Status::Ok();
    }, false));
    OANS_RETURN_IF_ERROR(details_.Preload(needed, o_.memory / 2, reports != nullptr));
  }
  OANS_RETURN_IF_ERROR(groups([&](const std::vector<uint32_t>& ids, bool one_layout, uint64_t size) -> Status {
    if (needs_details(ids, one_layout)) return WholeGroup(ids, reports);
    if (!any_changed(ids)) return Status::Ok();
    stats_->whole_groups++;
    for (size_t i = 1; i < ids.size(); ++i) is_dest_[ids[i]] = true;
    stats_->duplicate_bytes += size * (ids.size() - 1);
    stats_->shared_bytes += size * (ids.size() - 1);
    return Status::Ok();
  }, true));
  return Status::Ok();
}

Status Planner::WholeGroup(const std::vector<uint32_t>& ids, std::vector<GroupReport>* reports) {
  bool any_changed = false;
  for (uint32_t m : ids) any_changed |= changed_[m];
  if (!any_changed) return Status::Ok();
  stats_->whole_groups++;
  std::vector<std::shared_ptr<const Detail>> files;
  std::unordered_map<uint32_t, size_t> slot;
  for (uint32_t m : ids) {
    auto d = details_.Get(m);
    if (!d.ok()) return d.status();
    slot[m] = files.size();
    files.push_back(*d);
  }
  auto at = [&](uint32_t id) -> const Detail& { return *files[slot[id]]; };
  // Members in physical order, then in the order the indexes list them (the ids'
  // order). Members that share one layout (all of a group that needs no details) start
  // at one physical address, so id order is already this order for them.
  std::vector<uint32_t> members = ids;
  std::sort(members.begin(), members.end(), [&](uint32_t x, uint32_t y) {
    return std::tie(at(x).first_physical, x) < std::tie(at(y).first_physical, y);
  });
  auto sig_less = [&](uint32_t a, uint32_t b) {
    const auto &x = at(a).extents, &y = at(b).extents;
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end(),
                                        [](const FiemapExtent& p, const FiemapExtent& q) {
                                          return std::tie(p.logical, p.physical, p.length) <
                                                 std::tie(q.logical, q.physical, q.length);
                                        });
  };
  auto sig_equal = [&](uint32_t a, uint32_t b) {
    const auto &x = at(a).extents, &y = at(b).extents;
    if (x.empty() || x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].logical != y[i].logical || x[i].physical != y[i].physical || x[i].length != y[i].length ||
          (x[i].flags & kUnusableExtent))
        return false;
    return true;
  };
  // Source: a member of the largest set that already shares one extent layout; among
  // equals, the one earliest on disk.
  std::vector<uint32_t> by_sig = members;
  std::stable_sort(by_sig.begin(), by_sig.end(), sig_less);
  uint32_t src = members.front();
  size_t best = 1;
  for (size_t a = 0; a < by_sig.size();) {
    size_t b = a + 1;
    while (b < by_sig.size() && sig_equal(by_sig[a], by_sig[b])) ++b;
    if (b - a > best) {
      best = b - a;
      src = *std::min_element(by_sig.begin() + long(a), by_sig.begin() + long(b), [&](uint32_t x, uint32_t y) {
        return std::tie(at(x).first_physical, x) < std::tie(at(y).first_physical, y);
      });
    }
    a = b;
  }
  const Detail& s = at(src);
  const uint64_t align = header_.filesystems[s.fs].block_size ? header_.filesystems[s.fs].block_size : 4096;
  GroupReport report;
  report.size = s.size;
  if (reports) {
    auto p = details_.Path(src);
    if (!p.ok()) return p.status();
    report.source = std::move(*p);
  }
  // Destinations with the same unshared ranges share one operation.
  std::map<std::pair<uint64_t, uint64_t>, Unit> by_range;
  for (uint32_t d : members) {
    if (d == src) continue;
    is_dest_[d] = true;
    stats_->duplicate_bytes += s.size;
    std::vector<Range> unshared;
    if (sig_equal(src, d)) {
      stats_->shared_bytes += s.size;
    } else {
      auto shared = SharedRanges(s.extents, at(d).extents, s.size);
      for (const auto& r : shared) stats_->shared_bytes += r.length;
      unshared = UnsharedRanges(shared, s.size, align);
      // Holes in the source have nothing to share.
      if (!s.extents.empty()) unshared = IntersectRanges(unshared, DataRanges(s.extents, s.size, align));
    }
    if (reports) {
      auto p = details_.Path(d);
      if (!p.ok()) return p.status();
      report.dests.push_back(std::move(*p));
      report.dest_shared.push_back(unshared.empty());
    }
    for (const auto& r : unshared) {
      Unit& u = by_range[{r.offset, r.length}];
      u.src = src;
      u.offset = r.offset;
      u.length = r.length;
      u.dests.push_back({d, r.offset, 0});
    }
  }
  for (auto& [k, u] : by_range) OANS_RETURN_IF_ERROR(AddOps(u));
  if (reports) reports->push_back(std::move(report));
  return Status::Ok();
}

// Runs of identical blocks between files that are not whole-file destinations.
Status Planner::PlanBlocks() {
  const uint32_t bs = header_.block_size;
  ExternalSorter<PairKey, PairLess> pairs(dir_, o_.memory / 4);
  std::vector<BlockKey> group;
  auto flush = [&]() -> Status {
    if (group.size() < 2) {
      group.clear();
      return Status::Ok();
    }
    bool any_changed = false, counted = false;
    for (const auto& b : group) any_changed |= changed_[b.file];
    const BlockKey& s = group.front();
    for (size_t k = 1; k < group.size() && any_changed; ++k) {
      const BlockKey& d = group[k];
      if (d.file == s.file && d.blk == s.blk) continue;
      if (!counted) {
        stats_->block_groups++;
        counted = true;
      }
      stats_->duplicate_bytes += bs;
      if (s.physical == d.physical && s.physical_end == d.physical_end) {
        stats_->shared_bytes += bs;
        continue;
      }
      OANS_RETURN_IF_ERROR(pairs.Add({s.file, d.file, s.blk, d.blk}));
    }
    group.clear();
    return Status::Ok();
  };
  OANS_RETURN_IF_ERROR(blocks_.Drain([&](const BlockKey& b) -> Status {
    if (is_dest_[b.file] || dropped_[b.file]) return Status::Ok();
    if (!group.empty() && !(b.pair == group.front().pair && b.hash == group.front().hash))
      OANS_RETURN_IF_ERROR(flush());
    group.push_back(b);
    return Status::Ok();
  }));
  OANS_RETURN_IF_ERROR(flush());

  // Consecutive pairs with the same offset between source and destination form a run.
  ExternalSorter<RunKey, RunLess> runs(dir_, o_.memory / 4);
  bool open = false;
  PairKey first{}, prev{};
  uint64_t len = 0, max_run = 0;
  auto close_run = [&]() -> Status {
    if (!open) return Status::Ok();
    open = false;
    return runs.Add({first.src, first.dst, uint64_t(first.sblk) * bs, len * bs, uint64_t(first.dblk) * bs});
  };
  OANS_RETURN_IF_ERROR(pairs.Drain([&](const PairKey& p) -> Status {
    if (open && p.src == first.src && p.dst == first.dst && p.delta() == first.delta() && p.sblk == prev.sblk + 1 &&
        len < max_run) {
      prev = p;
      len++;
      return Status::Ok();
    }
    OANS_RETURN_IF_ERROR(close_run());
    open = true;
    first = prev = p;
    len = 1;
    // Within one file, a run may not overlap its own copy.
    max_run = p.src == p.dst ? uint64_t(std::abs(p.delta())) : UINT64_MAX;
    return Status::Ok();
  }));
  OANS_RETURN_IF_ERROR(close_run());

  // One operation for every destination of the same source range.
  Unit u;
  bool have = false;
  OANS_RETURN_IF_ERROR(runs.Drain([&](const RunKey& r) -> Status {
    if (have && r.src == u.src && r.offset == u.offset && r.length == u.length) {
      u.dests.push_back({r.dst, r.dst_offset, 0});
      return Status::Ok();
    }
    if (have) OANS_RETURN_IF_ERROR(AddOps(u));
    have = true;
    u.src = r.src;
    u.offset = r.offset;
    u.length = r.length;
    u.dests.assign(1, {r.dst, r.dst_offset, 0});
    return Status::Ok();
  }));
  if (have) OANS_RETURN_IF_ERROR(AddOps(u));
  return Status::Ok();
}

// Splits a unit into operations that fit a round and an ioctl, each with physical
// addresses, and queues them by the source's physical offset.
Status Planner::AddOps(const Unit& u) {
  auto src = details_.Get(u.src);
  if (!src.ok()) return src.status();
  std::shared_ptr<const Detail> s = *src;
  const uint64_t align = std::max<uint64_t>(4096, header_.filesystems[s->fs].block_size);
  const size_t max_dests = size_t(std::clamp<uint64_t>(o_.round_size / align - 1, 1, kMaxDedupeDests));
  for (size_t d0 = 0; d0 < u.dests.size(); d0 += max_dests) {
    size_t nd = std::min(max_dests, u.dests.size() - d0);
    uint64_t chunk = std::max<uint64_t>(align, o_.round_size / (1 + nd) / align * align);
    for (uint64_t c = 0; c < u.length; c += chunk) {
      PlanOp op;
      op.source = u.src;
      op.offset = u.offset + c;
      op.length = std::min(chunk, u.length - c);
      op.physical = PhysicalAt(s->extents, op.offset);
      for (size_t k = d0; k < d0 + nd; ++k) {
        auto d = details_.Get(u.dests[k].file);
        if (!d.ok()) return d.status();
        uint64_t doff = u.dests[k].offset + c;
        op.dests.push_back({u.dests[k].file, doff, PhysicalAt((*d)->extents, doff)});
      }
      stats_->planned_bytes += op.length * nd;
      OpKey key{op.physical, op.offset, op.length, ops_.size(), 0, 0, op.source, uint32_t(nd), 0};
      op_files_[op.source] = true;
      for (const auto& d : op.dests) op_files_[d.file] = true;
      if (nd == 1) {
        key.dest = op.dests[0].file;
        key.dest_offset = op.dests[0].offset;
        key.dest_physical = op.dests[0].physical;
      } else {
        auto stored = op_store_.Add(EncodeOp(op));
        if (!stored.ok()) return stored.status();
        key.dest_offset = *stored;
      }
      OANS_RETURN_IF_ERROR(ops_.Add(key));
    }
  }
  return Status::Ok();
}

// Packs the operations, in physical order, into rounds: once to count them for the
// header, once to write them.
Status Planner::WriteRounds(OutputFile* out) {
  uint64_t rounds = 0, in_round = 0;
  bool first = true;
  OANS_RETURN_IF_ERROR(ops_.ForEach([&](const OpKey& k) {
    if (first || in_round + k.bytes() > o_.round_size) {
      rounds++;
      in_round = 0;
      first = false;
    }
    in_round += k.bytes();
    return Status::Ok();
  }));
  stats_->ops = ops_.size();
  stats_->rounds = rounds;
  header_.rounds = rounds;
  header_.groups = stats_->whole_groups + stats_->block_groups;
  header_.duplicate_bytes = stats_->duplicate_bytes;
  header_.shared_bytes = stats_->shared_bytes;
  header_.planned_bytes = stats_->planned_bytes;
  if (!out) return Status::Ok();  // a report only
  // The files the plan names, fetched in one sequential pass when their details are on
  // disk (a large plan); a smaller one reads each path once, as it needs it.
  if (details_.spilled()) OANS_RETURN_IF_ERROR(details_.Preload(op_files_, o_.memory / 2, true));

  PlanWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(header_));
  PlanRound round;
  std::unordered_map<uint32_t, uint32_t> local;
  std::string scratch;
  uint64_t written = 0;
  auto local_id = [&](uint32_t f) -> Result<uint32_t> {
    auto it = local.find(f);
    if (it != local.end()) return it->second;
    auto d = details_.Get(f);
    if (!d.ok()) return d.status();
    const Detail& p = **d;
    auto path = details_.Path(f);
    if (!path.ok()) return path.status();
    round.files.push_back({std::move(*path), p.fs, p.dev, p.ino, p.size, p.mtime_ns});
    uint32_t id = uint32_t(round.files.size() - 1);
    local.emplace(f, id);
    return id;
  };
  auto emit = [&]() -> Status {
    if (round.ops.empty()) return Status::Ok();
    round.index = written++;
    OANS_RETURN_IF_ERROR(writer.AddRound(std::move(round)));
    round = PlanRound();
    local.clear();
    return Status::Ok();
  };
  OANS_RETURN_IF_ERROR(ops_.Drain([&](const OpKey& k) -> Status {
    if (!round.ops.empty() && round.bytes + k.bytes() > o_.round_size) OANS_RETURN_IF_ERROR(emit());
    PlanOp op;
    if (k.dests == 1) {
      op.source = k.source;
      op.offset = k.offset;
      op.length = k.length;
      op.physical = k.physical;
      op.dests.push_back({k.dest, k.dest_offset, k.dest_physical});
    } else {
      OANS_RETURN_IF_ERROR(op_store_.Get(k.stored(), &scratch));
      OANS_RETURN_IF_ERROR(DecodeOp(scratch, &op));
    }
    auto s = local_id(op.source);
    if (!s.ok()) return s.status();
    op.source = *s;
    for (auto& d : op.dests) {
      auto l = local_id(d.file);
      if (!l.ok()) return l.status();
      d.file = *l;
    }
    round.bytes += k.bytes();
    round.ops.push_back(std::move(op));
    return Status::Ok();
  }));
  OANS_RETURN_IF_ERROR(emit());
  if (written != rounds) return Status::Corrupt("planner: rounds written differ from rounds counted");
  return writer.Finish();
}

Status Planner::Run(OutputFile* out, std::vector<GroupReport>* reports) {
  header_.tool_version = ToolVersion();
  header_.created_ns = NowNs();
  header_.round_size = o_.round_size;
  header_.block_size = 0;
  header_.command_line = o_.command_line;
  OANS_RETURN_IF_ERROR(Load());
  if (header_.block_size == 0) header_.block_size = 128 * 1024;
  OANS_RETURN_IF_ERROR(DropDuplicateInodes());
  if (o_.whole_files) OANS_RETURN_IF_ERROR(PlanWholeFiles(reports));
  if (o_.blocks) OANS_RETURN_IF_ERROR(PlanBlocks());
  stats_->spilled = details_.spilled() || whole_.runs() > 0 || ops_.runs() > 0;
  return WriteRounds(out);
}

}  // namespace

std::vector<Range> DataRanges(const std::vector<FiemapExtent>& extents, uint64_t size, uint64_t align) {
  std::vector<Range> out;
  for (const auto& e : extents) {
    if (e.flags & kExtentUnwritten) continue;  // preallocated: reads as zeros
    uint64_t lo = e.logical / align * align;
    uint64_t hi = std::min(size, (e.logical + e.length + align - 1) / align * align);
    if (lo >= hi) continue;
    if (!out.empty() && out.back().offset + out.back().length >= lo)
      out.back().length = std::max(out.back().offset + out.back().length, hi) - out.back().offset;
    else
      out.push_back({lo, hi - lo});
  }
  return out;
}

std::vector<Range> IntersectRanges(const std::vector<Range>& a, const std::vector<Range>& b) {
  std::vector<Range> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t lo = std::max(a[i].offset, b[j].offset);
    uint64_t hi = std::min(a[i].offset + a[i].length, b[j].offset + b[j].length);
    if (lo < hi) out.push_back({lo, hi - lo});
    if (a[i].offset + a[i].length <= b[j].offset + b[j].length) ++i;
    else ++j;
  }
  return out;
}

uint64_t PhysicalAt(const std::vector<FiemapExtent>& extents, uint64_t logical) {
  auto it = std::upper_bound(extents.begin(), extents.end(), logical,
                             [](uint64_t l, const FiemapExtent& e) { return l < e.logical; });
  if (it == extents.begin()) return UINT64_MAX;
  --it;
  if (logical >= it->logical + it->length || (it->flags & kUnusableExtent)) return UINT64_MAX;
  if (it->flags & kExtentEncoded) return it->physical;
  return it->physical + (logical - it->logical);
}

std::vector<Range> SharedRanges(const std::vector<FiemapExtent>& src, const std::vector<FiemapExtent>& dst,
                                uint64_t size) {
  std::vector<Range> out;
  size_t i = 0, j = 0;
  while (i < src.size() && j < dst.size()) {
    const auto &a = src[i], &b = dst[j];
    uint64_t lo = std::max(a.logical, b.logical);
    uint64_t hi = std::min({a.logical + a.length, b.logical + b.length, size});
    if (lo < hi && SameMapping(a, b)) {
      if (!out.empty() && out.back().offset + out.back().length == lo) out.back().length += hi - lo;
      else out.push_back({lo, hi - lo});
    }
    if (a.logical + a.length <= b.logical + b.length) ++i;
    else ++j;
  }
  return out;
}

std::vector<Range> UnsharedRanges(const std::vector<Range>& shared, uint64_t size, uint64_t align) {
  std::vector<Range> out;
  uint64_t pos = 0;
  auto add = [&](uint64_t lo, uint64_t hi) {
    lo = lo / align * align;
    hi = std::min(size, (hi + align - 1) / align * align);
    if (lo >= hi) return;
    if (!out.empty() && out.back().offset + out.back().length >= lo) {
      out.back().length = std::max(out.back().offset + out.back().length, hi) - out.back().offset;
    } else {
      out.push_back({lo, hi - lo});
    }
  };
  for (const auto& r : shared) {
    if (r.offset > pos) add(pos, r.offset);
    pos = std::max(pos, r.offset + r.length);
  }
  if (pos < size) add(pos, size);
  return out;
}


Status RunPlan(const PlanOptions& o, OutputFile* out, Observer* observer, PlanStats* stats,
               std::vector<GroupReport>* reports) {
  Observer quiet;
  if (!observer) observer = &quiet;
  if (o.round_size < (1u << 20)) return Status::Invalid("--round-size must be at least 1M");
  if (o.memory < (64u << 10)) return Status::Invalid("--memory must be at least 64K");
  Planner planner(o, observer, stats);
  return planner.Run(out, reports);
}

}  // namespace oans
