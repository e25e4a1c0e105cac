#include "lib/planner.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "lib/version.h"

namespace oans {
namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;  // FS_NOCOW_FL
constexpr uint32_t kUnusableExtent = kExtentInline | kExtentDelalloc | kExtentUnknown;

struct PFile {
  std::string path;
  uint32_t fs = 0;    // index into the plan's filesystems (uuid + subvolume)
  uint32_t pair = 0;  // filesystem (uuid) id: only files with equal `pair` are paired
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
  FileIdentity id;  // for --since
  Hash128 hash;
  std::vector<FiemapExtent> extents;
  std::vector<Hash128> blocks;
  uint64_t first_physical = UINT64_MAX;
  bool changed = true;  // new or changed since --since (always true without it)
};

struct Unit {
  uint32_t src = 0;
  uint64_t offset = 0, length = 0;
  std::vector<PlanDest> dests;  // file = PFile id, physical filled later
};

bool SameMapping(const FiemapExtent& a, const FiemapExtent& b) {
  if ((a.flags | b.flags) & kUnusableExtent) return false;
  if ((a.flags | b.flags) & kExtentEncoded) return a.physical == b.physical && a.logical == b.logical;
  return a.physical - a.logical == b.physical - b.logical;
}

// Loads every index into `files`, one record per (filesystem, inode).
Status Load(const PlanOptions& o, PlanHeader* header, std::vector<PFile>* files, PlanStats* stats,
            Observer* observer) {
  std::map<std::string, uint32_t> fs_index;   // uuid/subvolume -> plan filesystem
  std::map<std::string, uint32_t> pair_index; // uuid -> pairing id
  std::unordered_map<std::string, std::unordered_map<uint64_t, uint32_t>> seen;  // fs key -> ino -> file
  std::vector<uint32_t> remap;
  uint64_t loaded = 0, loaded_bytes = 0;
  for (const auto& path : o.indexes) {
    std::vector<uint32_t> pairs_of_section;
    auto r = ReadIndex(
        path, IndexReadOptions{},
        [&](const IndexHeader& h) {
          if (header->block_size == 0 || header->indexes.empty()) header->block_size = h.block_size;
          if (h.block_size != header->block_size)
            return Status::Invalid(path + " was scanned with --block-size " + std::to_string(h.block_size) +
                                   " but another index with " + std::to_string(header->block_size) +
                                   "; scan them with the same block size");
          for (const auto& root : h.roots)
            if (std::find(header->roots.begin(), header->roots.end(), root) == header->roots.end())
              header->roots.push_back(root);
          remap.clear();
          pairs_of_section.clear();
          for (const auto& f : h.filesystems) {
            auto it = fs_index.find(f.Key());
            if (it == fs_index.end()) {
              header->filesystems.push_back(f);
              it = fs_index.emplace(f.Key(), uint32_t(header->filesystems.size() - 1)).first;
            }
            remap.push_back(it->second);
            auto p = pair_index.emplace(f.uuid, uint32_t(pair_index.size())).first;
            pairs_of_section.push_back(p->second);
          }
          if (std::find(header->indexes.begin(), header->indexes.end(), path) == header->indexes.end())
            header->indexes.push_back(path);
          return Status::Ok();
        },
        [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
          loaded += batch.size();
          for (const auto& e : batch) loaded_bytes += e.size;
          observer->Progress({"load", loaded_bytes, 0, loaded, 0});
          for (auto& e : batch) {
            if (!e.error.empty() || !e.hashed) {
              stats->skipped_errors++;
              continue;
            }
            bool inline_data = false;
            for (const auto& x : e.extents)
              if (x.flags & kExtentInline) inline_data = true;
            if (inline_data) {
              stats->skipped_inline++;
              continue;
            }
            auto& inodes = seen[h.filesystems[e.fs].Key()];
            if (!inodes.emplace(e.ino, uint32_t(files->size())).second) {
              stats->duplicate_inodes++;
              continue;
            }
            PFile f;
            f.id = FileIdentity::Of(e);
            f.path = std::move(e.path);
            f.fs = remap[e.fs];
            // btrfs refuses to share between nodatacow and ordinary files: never pair them.
            f.pair = pairs_of_section[e.fs] * 2 + ((e.inode_flags & kNoCowFlag) ? 1 : 0);
            f.dev = e.dev;
            f.ino = e.ino;
            f.size = e.size;
            f.mtime_ns = e.mtime_ns;
            f.hash = e.hash;
            f.extents = std::move(e.extents);
            std::sort(f.extents.begin(), f.extents.end(),
                      [](const FiemapExtent& a, const FiemapExtent& b) { return a.logical < b.logical; });
            f.blocks = std::move(e.block_hashes);
            f.first_physical = PhysicalAt(f.extents, 0);
            files->push_back(std::move(f));
          }
          return Status::Ok();
        });
    if (!r.ok()) return r.status();
  }
  stats->files = files->size();
  stats->filesystems = pair_index.size();
  if (!o.since.empty()) {
    std::unordered_map<std::string, std::unordered_map<uint64_t, FileIdentity>> old;
    IndexReadOptions ro;
    ro.allow_truncated = true;
    auto r = ReadIndex(
        o.since, ro, [](const IndexHeader&) { return Status::Ok(); },
        [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
          for (auto& e : batch)
            if (e.hashed) old[h.filesystems[e.fs].Key()][e.ino] = FileIdentity::Of(e);
          return Status::Ok();
        });
    if (!r.ok()) return r.status().Prepend("--since");
    stats->since_truncated = r->truncated;
    if (r->truncated) observer->Notice("warning: " + o.since + " is incomplete; files missing from it count as new");
    for (auto& f : *files) {
      auto fs = old.find(header->filesystems[f.fs].Key());
      if (fs == old.end()) continue;
      auto it = fs->second.find(f.ino);
      if (it != fs->second.end() && f.id.UnchangedFrom(it->second)) f.changed = false;
    }
  }
  return Status::Ok();
}

// Whole-file groups: equal filesystem, size and hash.
void PlanWholeFiles(std::vector<PFile>& files, PlanStats* stats, std::vector<Unit>* units, std::vector<bool>* is_dest,
                    std::vector<GroupReport>* reports, uint32_t align_of_pair_default,
                    const std::vector<FsRecord>& filesystems) {
  std::vector<uint32_t> order(files.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const PFile &x = files[a], &y = files[b];
    return std::tie(x.pair, x.size, x.hash, x.first_physical, x.path) <
           std::tie(y.pair, y.size, y.hash, y.first_physical, y.path);
  });
  auto sig_less = [&](uint32_t a, uint32_t b) {
    const auto &x = files[a].extents, &y = files[b].extents;
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end(),
                                        [](const FiemapExtent& p, const FiemapExtent& q) {
                                          return std::tie(p.logical, p.physical, p.length) <
                                                 std::tie(q.logical, q.physical, q.length);
                                        });
  };
  auto sig_equal = [&](uint32_t a, uint32_t b) {
    const auto &x = files[a].extents, &y = files[b].extents;
    if (x.empty() || x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].logical != y[i].logical || x[i].physical != y[i].physical || x[i].length != y[i].length ||
          (x[i].flags & kUnusableExtent))
        return false;
    return true;
  };
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    const PFile& head = files[order[i]];
    while (j < order.size() && files[order[j]].pair == head.pair && files[order[j]].size == head.size &&
           files[order[j]].hash == head.hash)
      ++j;
    if (j - i < 2) {
      i = j;
      continue;
    }
    std::vector<uint32_t> members(order.begin() + long(i), order.begin() + long(j));
    i = j;
    bool any_changed = false;
    for (uint32_t m : members) any_changed |= files[m].changed;
    if (!any_changed) continue;
    stats->whole_groups++;
    // Source: a member of the largest set that already shares one extent layout;
    // among equals, the one earliest on disk (members are in physical order).
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
          return std::tie(files[x].first_physical, files[x].path) < std::tie(files[y].first_physical, files[y].path);
        });
      }
      a = b;
    }
    const PFile& s = files[src];
    const uint64_t align = filesystems[s.fs].block_size ? filesystems[s.fs].block_size : align_of_pair_default;
    GroupReport report;
    report.size = s.size;
    report.source = s.path;
    // Destinations with the same unshared ranges share one operation.
    std::map<std::pair<uint64_t, uint64_t>, Unit> by_range;
    for (uint32_t d : members) {
      if (d == src) continue;
      (*is_dest)[d] = true;
      stats->duplicate_bytes += s.size;
      std::vector<Range> unshared;
      if (sig_equal(src, d)) {
        stats->shared_bytes += s.size;
      } else {
        auto shared = SharedRanges(s.extents, files[d].extents, s.size);
        for (const auto& r : shared) stats->shared_bytes += r.length;
        unshared = UnsharedRanges(shared, s.size, align);
        // Holes in the source have nothing to share.
        if (!s.extents.empty()) unshared = IntersectRanges(unshared, DataRanges(s.extents, s.size, align));
      }
      report.dests.push_back(files[d].path);
      report.dest_shared.push_back(unshared.empty());
      for (const auto& r : unshared) {
        Unit& u = by_range[{r.offset, r.length}];
        u.src = src;
        u.offset = r.offset;
        u.length = r.length;
        u.dests.push_back({d, r.offset, 0});
      }
    }
    for (auto& [k, u] : by_range) units->push_back(std::move(u));
    if (reports) reports->push_back(std::move(report));
  }
}

// Runs of identical blocks between files that are not whole-file destinations.
void PlanBlocks(const std::vector<PFile>& files, const std::vector<bool>& is_dest, uint32_t bs, PlanStats* stats,
                std::vector<Unit>* units) {
  struct B {
    uint32_t pair;
    Hash128 hash;
    uint32_t file;
    uint32_t blk;
  };
  std::vector<B> blocks;
  for (uint32_t f = 0; f < files.size(); ++f) {
    if (is_dest[f]) continue;
    const PFile& p = files[f];
    const uint64_t full = p.size / bs;
    for (uint64_t b = 0; b < full && b < p.blocks.size(); ++b) blocks.push_back({p.pair, p.blocks[b], f, uint32_t(b)});
  }
  std::sort(blocks.begin(), blocks.end(), [&](const B& x, const B& y) {
    return std::tie(x.pair, x.hash, x.file, x.blk) < std::tie(y.pair, y.hash, y.file, y.blk);
  });
  struct Pair {
    uint32_t src, dst;
    uint64_t sblk, dblk;
  };
  std::vector<Pair> pairs;
  for (size_t i = 0; i < blocks.size();) {
    size_t j = i + 1;
    while (j < blocks.size() && blocks[j].pair == blocks[i].pair && blocks[j].hash == blocks[i].hash) ++j;
    if (j - i >= 2) {
      const B& s = blocks[i];
      bool any_changed = false, counted = false;
      for (size_t k = i; k < j; ++k) any_changed |= files[blocks[k].file].changed;
      for (size_t k = i + 1; k < j && any_changed; ++k) {
        const B& d = blocks[k];
        if (d.file == s.file && d.blk == s.blk) continue;
        const uint64_t so = uint64_t(s.blk) * bs, dof = uint64_t(d.blk) * bs;
        uint64_t sp = PhysicalAt(files[s.file].extents, so), dp = PhysicalAt(files[d.file].extents, dof);
        if (sp == UINT64_MAX || dp == UINT64_MAX) continue;  // a hole or inline data: nothing to share
        if (!counted) {
          stats->block_groups++;
          counted = true;
        }
        stats->duplicate_bytes += bs;
        uint64_t sp_end = PhysicalAt(files[s.file].extents, so + bs - 1);
        uint64_t dp_end = PhysicalAt(files[d.file].extents, dof + bs - 1);
        if (sp == dp && sp_end == dp_end) {
          stats->shared_bytes += bs;
          continue;
        }
        pairs.push_back({s.file, d.file, s.blk, d.blk});
      }
    }
    i = j;
  }
  std::vector<B>().swap(blocks);
  std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
    int64_t dx = int64_t(x.dblk) - int64_t(x.sblk), dy = int64_t(y.dblk) - int64_t(y.sblk);
    return std::tie(x.src, x.dst, dx, x.sblk) < std::tie(y.src, y.dst, dy, y.sblk);
  });
  std::vector<Unit> runs;
  for (size_t i = 0; i < pairs.size();) {
    const Pair& p = pairs[i];
    const int64_t delta = int64_t(p.dblk) - int64_t(p.sblk);
    const uint64_t max_run = p.src == p.dst ? uint64_t(delta < 0 ? -delta : delta) : UINT64_MAX;
    size_t j = i + 1;
    while (j < pairs.size() && pairs[j].src == p.src && pairs[j].dst == p.dst &&
           int64_t(pairs[j].dblk) - int64_t(pairs[j].sblk) == delta && pairs[j].sblk == pairs[j - 1].sblk + 1 &&
           j - i < max_run)
      ++j;
    Unit u;
    u.src = p.src;
    u.offset = p.sblk * bs;
    u.length = (j - i) * uint64_t(bs);
    u.dests.push_back({p.dst, p.dblk * bs, 0});
    runs.push_back(std::move(u));
    i = j;
  }
  // One operation for every destination of the same source range.
  std::sort(runs.begin(), runs.end(), [](const Unit& a, const Unit& b) {
    return std::tie(a.src, a.offset, a.length) < std::tie(b.src, b.offset, b.length);
  });
  for (size_t i = 0; i < runs.size();) {
    Unit u = std::move(runs[i]);
    size_t j = i + 1;
    for (; j < runs.size() && runs[j].src == u.src && runs[j].offset == u.offset && runs[j].length == u.length; ++j)
      u.dests.push_back(runs[j].dests.front());
    units->push_back(std::move(u));
    i = j;
  }
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
  PlanHeader header;
  header.tool_version = ToolVersion();
  header.created_ns = NowNs();
  header.round_size = o.round_size;
  header.block_size = 0;
  header.command_line = o.command_line;
  std::vector<PFile> files;
  OANS_RETURN_IF_ERROR(Load(o, &header, &files, stats, observer));
  if (header.block_size == 0) header.block_size = 128 * 1024;

  std::vector<Unit> units;
  std::vector<bool> is_dest(files.size(), false);
  if (o.whole_files) PlanWholeFiles(files, stats, &units, &is_dest, reports, 4096, header.filesystems);
  if (o.blocks) PlanBlocks(files, is_dest, header.block_size, stats, &units);

  // Split into operations that fit a round and an ioctl, each with physical addresses.
  struct Op {
    PlanOp op;
    uint64_t bytes;
  };
  std::vector<Op> ops;
  for (auto& u : units) {
    const PFile& s = files[u.src];
    const uint64_t align = std::max<uint64_t>(4096, header.filesystems[s.fs].block_size);
    const size_t max_dests = size_t(std::clamp<uint64_t>(o.round_size / align - 1, 1, kMaxDedupeDests));
    for (size_t d0 = 0; d0 < u.dests.size(); d0 += max_dests) {
      size_t nd = std::min(max_dests, u.dests.size() - d0);
      uint64_t chunk = std::max<uint64_t>(align, o.round_size / (1 + nd) / align * align);
      for (uint64_t c = 0; c < u.length; c += chunk) {
        Op op;
        op.op.source = u.src;
        op.op.offset = u.offset + c;
        op.op.length = std::min(chunk, u.length - c);
        op.op.physical = PhysicalAt(s.extents, op.op.offset);
        for (size_t k = d0; k < d0 + nd; ++k) {
          const PFile& d = files[u.dests[k].file];
          uint64_t doff = u.dests[k].offset + c;
          op.op.dests.push_back({u.dests[k].file, doff, PhysicalAt(d.extents, doff)});
        }
        op.bytes = op.op.length * (1 + nd);
        stats->planned_bytes += op.op.length * nd;
        ops.push_back(std::move(op));
      }
    }
  }
  std::vector<Unit>().swap(units);
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
    return std::tie(a.op.physical, a.op.source, a.op.offset) < std::tie(b.op.physical, b.op.source, b.op.offset);
  });

  // Pack into rounds.
  std::vector<std::pair<size_t, size_t>> round_spans;
  uint64_t in_round = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (round_spans.empty() || in_round + ops[i].bytes > o.round_size) {
      round_spans.push_back({i, i});
      in_round = 0;
    }
    round_spans.back().second = i + 1;
    in_round += ops[i].bytes;
  }
  stats->ops = ops.size();
  stats->rounds = round_spans.size();
  header.rounds = stats->rounds;
  header.groups = stats->whole_groups + stats->block_groups;
  header.duplicate_bytes = stats->duplicate_bytes;
  header.shared_bytes = stats->shared_bytes;
  header.planned_bytes = stats->planned_bytes;

  if (!out) return Status::Ok();  // a report only
  PlanWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(header));
  for (size_t r = 0; r < round_spans.size(); ++r) {
    PlanRound round;
    round.index = r;
    std::unordered_map<uint32_t, uint32_t> local;
    auto local_id = [&](uint32_t f) {
      auto it = local.find(f);
      if (it != local.end()) return it->second;
      const PFile& p = files[f];
      round.files.push_back({p.path, p.fs, p.dev, p.ino, p.size, p.mtime_ns});
      uint32_t id = uint32_t(round.files.size() - 1);
      local.emplace(f, id);
      return id;
    };
    for (size_t i = round_spans[r].first; i < round_spans[r].second; ++i) {
      PlanOp op = std::move(ops[i].op);
      op.source = local_id(op.source);
      for (auto& d : op.dests) d.file = local_id(d.file);
      round.bytes += ops[i].bytes;
      round.ops.push_back(std::move(op));
    }
    OANS_RETURN_IF_ERROR(writer.AddRound(round));
  }
  return writer.Finish();
}

}  // namespace oans
