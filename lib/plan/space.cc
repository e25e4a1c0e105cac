#include "lib/plan/space.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "lib/plan/ops.h"

namespace oans {
namespace {

// Extent tree bytes per data reference added or dropped (an inline or keyed
// EXTENT_DATA_REF), per extent item freed, and per 4 KiB of checksums freed (crc32c).
constexpr int64_t kRefBytes = kSpaceRefBytes, kExtentItemBytes = 53, kCsumPerSector = 4;

// A destination range of an operation: [offset, end) of file `file`.
struct Cover {
  uint32_t file;
  uint64_t offset, end;
  bool operator<(const Cover& o) const { return std::tie(file, offset, end) < std::tie(o.file, o.offset, o.end); }
};

Status Covers(PlanState& st, std::vector<Cover>* out, SpaceTally* t) {
  std::string scratch;
  PlanOp op;
  return st.ops.ForEach([&](const OpKey& k) -> Status {
    OANS_RETURN_IF_ERROR(OpOfKey(st, k, &scratch, &op));
    t->ops += !op.dests.empty();
    for (const auto& d : op.dests) {
      out->push_back({d.file, d.offset, d.offset + op.length});
      if (d.file == op.source && d.offset == op.offset) t->rewritten += int64_t(op.length);
      else t->planned += int64_t(op.length);
    }
    return Status::Ok();
  });
}

// The census extents a piece points into: [first, last) in st.census.
std::pair<size_t, size_t> ExtentsOf(const PlanState& st, uint32_t uuid, const FiemapExtent& x) {
  const auto& c = st.census;
  const uint64_t end = (x.flags & kExtentEncoded) ? x.physical + 1 : x.physical + x.length;
  auto it = std::upper_bound(c.begin(), c.end(), std::make_pair(uuid, x.physical), [](const auto& k, const auto& e) {
    return std::tie(k.first, k.second) < std::tie(e.uuid, e.bytenr);
  });
  if (it != c.begin()) {
    auto prev = std::prev(it);
    if (prev->uuid == uuid && prev->bytenr + prev->disk_bytes > x.physical) it = prev;
  }
  size_t first = size_t(it - c.begin()), last = first;
  while (last < c.size() && c[last].uuid == uuid && c[last].bytenr < end) ++last;
  return {first, last};
}

// Which of one destination file's references the covered ranges drop.
Status DropsOf(PlanState& st, uint32_t file, std::vector<std::pair<uint64_t, uint64_t>>& ranges, SpaceTally* t) {
  OANS_ASSIGN_OR_RETURN(auto d, st.details.Get(file));
  std::map<size_t, bool> all;  // census extent -> every piece covered
  size_t r = 0;
  for (const auto& x : d->extents) {
    if (x.flags & (kExtentInline | kExtentUnknown | kExtentDelalloc)) continue;
    const uint64_t end = std::min(x.logical + x.length, std::max(d->size, x.logical + 1));
    while (r < ranges.size() && ranges[r].second <= x.logical) ++r;
    const bool covered = r < ranges.size() && ranges[r].first <= x.logical && ranges[r].second >= end;
    auto [first, last] = ExtentsOf(st, d->fs < st.fs_uuid.size() ? st.fs_uuid[d->fs] : UINT32_MAX, x);
    if (first == last) {  // no census: FIEMAP's shared flag says whether another file holds it
      t->unknown = true;
      if (covered && !(x.flags & kExtentShared)) t->unknown_freed += int64_t(x.length);
      continue;
    }
    t->pieces += covered;
    for (size_t e = first; e < last; ++e) {
      auto [it, fresh] = all.emplace(e, covered);
      if (!fresh) it->second = it->second && covered;
    }
  }
  for (const auto& [e, a] : all) t->drops.push_back({e, file, a});
  t->dests[d->fs]++;
  const IndexSubvolume sv = SubvolumeOf(st, d->fs);
  if (sv.node_size && sv.tree_bytes && d->fs < st.max_ino.size() && st.max_ino[d->fs] > 256) {
    const double leaves = double(sv.tree_bytes) / sv.node_size;
    const double per_leaf = std::max(1.0, double(st.max_ino[d->fs] - 255) / leaves);
    t->leaves[d->fs].insert(uint64_t(double(d->ino > 256 ? d->ino - 256 : 0) / per_leaf));
  }
  return Status::Ok();
}

}  // namespace

Status TallySpace(PlanState& st, SpaceTally* t) {
  std::sort(st.census.begin(), st.census.end(),
            [](const auto& a, const auto& b) { return std::tie(a.uuid, a.bytenr) < std::tie(b.uuid, b.bytenr); });
  std::vector<Cover> covers;
  OANS_RETURN_IF_ERROR(Covers(st, &covers, t));
  std::sort(covers.begin(), covers.end());
  for (size_t i = 0; i < covers.size();) {
    const uint32_t file = covers[i].file;
    t->dest_files.push_back(file);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (; i < covers.size() && covers[i].file == file; ++i) {
      if (!ranges.empty() && covers[i].offset <= ranges.back().second)
        ranges.back().second = std::max(ranges.back().second, covers[i].end);
      else ranges.push_back({covers[i].offset, covers[i].end});
    }
    OANS_RETURN_IF_ERROR(DropsOf(st, file, ranges, t));
    OANS_RETURN_IF_ERROR(st.CheckStop());
  }
  std::sort(t->drops.begin(), t->drops.end());
  return Status::Ok();
}

int64_t LeafCost(const PlanState& st, uint32_t fs, uint64_t leaves) {
  const IndexSubvolume sv = SubvolumeOf(st, fs);
  if (!sv.shared || leaves == 0) return 0;
  const uint64_t per_node = std::max<uint64_t>(1, sv.node_size / 33);  // key pointers per node
  return int64_t((leaves + 1 + leaves / per_node) * sv.node_size * sv.metadata_copies);
}

Status SpaceFigures(PlanState& st, const SpaceTally& t) {
  PlanStats& s = *st.stats;
  int64_t frees = t.unknown_freed, later = 0, extent_tree = kRefBytes * t.pieces;
  for (size_t i = 0; i < t.drops.size();) {
    const size_t e = t.drops[i].extent;
    uint32_t dropped = 0, dropped_ro = 0;
    for (; i < t.drops.size() && t.drops[i].extent == e; ++i) {
      if (!t.drops[i].all) continue;
      dropped++;
      OANS_ASSIGN_OR_RETURN(auto d, st.details.Get(t.drops[i].file));
      dropped_ro += SubvolumeOf(st, d->fs).read_only;
    }
    const auto& c = st.census[e];
    extent_tree -= kRefBytes * dropped;
    if (dropped > 0 && dropped >= c.refs) {
      frees += int64_t(c.disk_bytes);
      extent_tree -= kExtentItemBytes + int64_t(c.disk_bytes / 4096) * kCsumPerSector;
    } else if (c.refs - dropped <= c.ro_refs - std::min(c.ro_refs, dropped_ro)) {
      later += int64_t(c.disk_bytes);
    }
  }
  int64_t meta = 0;
  uint32_t copies = 1;
  s.leaves_rewritten = s.leaves_shared = 0;
  for (const auto& [fs, buckets] : t.leaves) {
    copies = std::max(copies, SubvolumeOf(st, fs).metadata_copies);
    s.leaves_rewritten += buckets.size();
    if (SubvolumeOf(st, fs).shared) s.leaves_shared += buckets.size();
    meta += LeafCost(st, fs, buckets.size());
  }
  meta = std::max<int64_t>(0, meta + extent_tree * copies);
  s.refs_known = !st.census.empty() && !t.unknown;
  s.frees_bytes = uint64_t(std::max<int64_t>(0, frees - t.rewritten));
  s.frees_later_bytes = uint64_t(later);
  s.metadata_bytes = uint64_t(meta);
  s.net_bytes = int64_t(s.frees_bytes) - meta;
  return Status::Ok();
}

Status EstimateSpace(PlanState& st) {
  SpaceTally t;
  OANS_RETURN_IF_ERROR(TallySpace(st, &t));
  return SpaceFigures(st, t);
}

}  // namespace oans
