#include "lib/plan/anchors.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "lib/plan/blocks.h"
#include "lib/plan/frees.h"
#include "lib/plan/ranges.h"
#include "lib/format/sector_sum_encoding.h"

namespace oans {
namespace {

constexpr uint64_t kAnchorSeed = 0x6f616e732d616e63ull;  // "oans-anc"

bool Repeated(std::string_view sums, size_t at) {
  for (size_t k = 1; k < kAnchorWindow; ++k)
    if (std::memcmp(sums.data() + 4 * at, sums.data() + 4 * (at + k), 4) != 0) return false;
  return true;
}

// The sums of file `id`, kept while it is extended against others.
struct Held {
  uint32_t id = UINT32_MAX;
  std::string sums;
  std::shared_ptr<const Detail> detail;
};

Status Hold(PlanState& st, uint32_t id, Held* h) {
  if (h->id == id) return Status::Ok();
  h->id = UINT32_MAX;
  OANS_ASSIGN_OR_RETURN(auto at, st.SumsOf(id));
  OANS_RETURN_IF_ERROR(st.sums.Get(at, &h->sums));
  OANS_ASSIGN_OR_RETURN(h->detail, st.details.Get(id));
  h->id = id;
  return Status::Ok();
}

// Moves [*from, *to) (bytes) inward so that no compressed extent is partly inside.
void TrimCompressed(const std::vector<FiemapExtent>& extents, uint64_t* from, uint64_t* to) {
  for (const auto& x : extents) {
    if (!(x.flags & kExtentEncoded)) continue;
    const uint64_t a = x.logical, b = x.logical + x.length;
    if (b <= *from || a >= *to || (a >= *from && b <= *to)) continue;  // outside, or wholly inside
    if (a < *from) *from = std::min(*to, b);  // crosses the start
    else *to = std::max(*from, a);            // crosses the end
  }
}

// One run found by extension, checked and made a RunKey: whole sectors of both files, no
// compressed extent of either split, not already shared (counted here; the rest by
// PairRuns, each destination byte once); a run through the last, partial
// sector of both files at the same place, with tails of one length, ends at the end of
// both (the kernel shares a range of any length that ends at the end of both files).
// Which runs are planned is PairRuns' choice (frees.h).
Status AddRun(PlanState& st, const Held& src, const Held& dst, const SectorRun& r, PairRuns* runs) {
  const uint64_t sz = src.detail->size, dz = dst.detail->size;
  const uint64_t ss = sz / kSectorBytes, ds = dz / kSectorBytes;  // whole sectors
  uint64_t len = std::min({r.length, ss > r.s ? ss - r.s : 0, ds > r.d ? ds - r.d : 0});
  uint64_t from = r.s * kSectorBytes, to = from + len * kSectorBytes;
  const uint64_t whole_from = from, whole_to = to;
  TrimCompressed(src.detail->extents, &from, &to);
  const uint64_t shift = r.d * kSectorBytes - r.s * kSectorBytes;  // modulo 2^64
  uint64_t dfrom = from + shift, dto = to + shift;
  TrimCompressed(dst.detail->extents, &dfrom, &dto);
  from = dfrom - shift, to = dto - shift;
  const bool untrimmed = from == whole_from && to == whole_to;  // else a compressed extent ends it
  const bool tails = sz % kSectorBytes != 0 && sz % kSectorBytes == dz % kSectorBytes && r.s <= ss && r.d <= ds &&
                     ss - r.s == ds - r.d && r.length > ss - r.s;
  if (untrimmed && tails && to == ss * kSectorBytes && to + shift == ds * kSectorBytes) to = sz;
  if (to <= from) return Status::Ok();
  const uint64_t length = to - from;
  const uint64_t dfirst = from + shift;
  if (PhysicalAt(src.detail->extents, from) == PhysicalAt(dst.detail->extents, dfirst) &&
      PhysicalAt(src.detail->extents, to - 1) == PhysicalAt(dst.detail->extents, dfirst + length - 1) &&
      PhysicalAt(src.detail->extents, from) != UINT64_MAX) {
    st.stats->partial_bytes += length;
    st.stats->duplicate_bytes += length;
    st.stats->shared_bytes += length;
    return Status::Ok();
  }
  if (!Written(src.detail->extents, from) || !Written(dst.detail->extents, dfirst)) return Status::Ok();
  return runs->Add({src.id, dst.id, from, length, dfirst});
}

// One group of equal anchors: its first against every other one.
Status PairAnchors(PlanState& st, const std::vector<AnchorKey>& group, ExternalSorter<PairKey, PairLess>* pairs) {
  if (group.size() < 2) return Status::Ok();
  bool any_changed = false;
  for (const auto& a : group) any_changed |= st.changed[a.file];
  if (!any_changed) return Status::Ok();
  const AnchorKey& s = group.front();
  for (size_t k = 1; k < group.size(); ++k) {
    const AnchorKey& d = group[k];
    if (d.file == s.file && d.sector == s.sector) continue;
    OANS_RETURN_IF_ERROR(pairs->Add({s.file, d.file, s.sector, d.sector}));
  }
  return Status::Ok();
}

}  // namespace

Status PairsOfAnchors(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs) {
  std::vector<AnchorKey> group;
  uint64_t done = 0;
  OANS_RETURN_IF_ERROR(st.anchors.Drain([&](const AnchorKey& a) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (st.is_dest[a.file] || st.dropped[a.file]) return Status::Ok();
    if (!group.empty() && !(a.pair == group.front().pair && a.hash == group.front().hash)) {
      OANS_RETURN_IF_ERROR(PairAnchors(st, group, pairs));
      group.clear();
    }
    group.push_back(a);
    return Status::Ok();
  }));
  return PairAnchors(st, group, pairs);
}

// Pairs in (source, destination, difference, sector) order, each extended unless the
// run found before on the same diagonal already covers it.
Status RunsOfAnchors(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs, ExternalSorter<RunKey, RunLess>* runs) {
  Held src, dst;
  PairRuns kept(st, runs, st.o.min_run, /*partial=*/true);
  bool have = false;
  PairKey last{};
  uint64_t covered_end = 0, done = 0;
  OANS_RETURN_IF_ERROR(pairs->Drain([&](const PairKey& p) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    const bool same_diagonal = have && p.src == last.src && p.dst == last.dst && p.delta() == last.delta();
    have = true;
    last = p;
    if (same_diagonal && p.sblk < covered_end) return Status::Ok();
    OANS_RETURN_IF_ERROR(Hold(st, p.src, &src));
    OANS_RETURN_IF_ERROR(Hold(st, p.dst, &dst));
    covered_end = p.sblk + 1;
    for (const SectorRun& r : Walk(src.sums, dst.sums, p.sblk, p.dblk, p.src == p.dst)) {
      covered_end = std::max(covered_end, r.s + r.length);
      OANS_RETURN_IF_ERROR(AddRun(st, src, dst, r, &kept));
    }
    return Status::Ok();
  }));
  return kept.Finish();
}

bool AnchorAt(std::string_view sums, size_t i, uint64_t* hash) {
  if (i + kAnchorWindow > sums.size() / 4) return false;
  const uint64_t h = XXH3_64bits_withSeed(sums.data() + 4 * i, 4 * kAnchorWindow, kAnchorSeed);
  if ((h & ((1u << kAnchorBits) - 1)) != 0 || Repeated(sums, i)) return false;
  *hash = h;
  return true;
}

Status AddAnchors(PlanState& st, std::string_view sums, uint32_t pair, uint32_t id) {
  const size_t n = sums.size() / 4;
  uint64_t h = 0;
  for (size_t i = 0; i + kAnchorWindow <= n; ++i)
    if (AnchorAt(sums, i, &h)) OANS_RETURN_IF_ERROR(st.anchors.Add({h, pair, id, uint32_t(i)}));
  return Status::Ok();
}

SectorRun Extend(std::string_view a, std::string_view b, uint64_t s, uint64_t d, bool same_file) {
  const uint64_t na = a.size() / 4, nb = b.size() / 4;
  auto eq = [&](uint64_t i, uint64_t j) { return std::memcmp(a.data() + 4 * i, b.data() + 4 * j, 4) == 0; };
  SectorRun r;
  if (s >= na || d >= nb || !eq(s, d)) return r;
  const uint64_t gap = s > d ? s - d : d - s;  // inside one file, a run is at most this long
  if (same_file && gap == 0) return r;
  uint64_t back = 0;
  while (back < std::min(s, d) && eq(s - back - 1, d - back - 1)) ++back;
  uint64_t len = back + 1;
  while (s - back + len < na && d - back + len < nb && eq(s - back + len, d - back + len)) ++len;
  r.s = s - back;
  r.d = d - back;
  r.length = same_file ? std::min(len, gap) : len;
  return r;
}

std::vector<SectorRun> Walk(std::string_view a, std::string_view b, uint64_t s, uint64_t d, bool same_file) {
  const uint64_t na = a.size() / 4, nb = b.size() / 4;
  auto eq = [&](uint64_t i, uint64_t j) { return std::memcmp(a.data() + 4 * i, b.data() + 4 * j, 4) == 0; };
  std::vector<SectorRun> out;
  const SectorRun first = Extend(a, b, s, d, same_file);
  if (first.length == 0) return out;
  const uint64_t cap = same_file ? (s > d ? s - d : d - s) : UINT64_MAX;  // no run overlaps its copy
  // Backwards: the nearest equal sector within kWalkGap + 1 before the earliest run, and
  // the run ending there.
  for (SectorRun r = first;;) {
    uint64_t k = 1;
    while (k <= kWalkGap + 1 && k <= std::min(r.s, r.d) && !eq(r.s - k, r.d - k)) ++k;
    if (k > kWalkGap + 1 || k > std::min(r.s, r.d)) break;
    const uint64_t es = r.s - k, ed = r.d - k;  // its last sector
    uint64_t len = 1;
    while (len < cap && len <= std::min(es, ed) && eq(es - len, ed - len)) ++len;
    r = {es + 1 - len, ed + 1 - len, len};
    out.push_back(r);
  }
  std::reverse(out.begin(), out.end());
  out.push_back(first);
  // Forwards, likewise.
  for (SectorRun r = first;;) {
    const uint64_t s0 = r.s + r.length, d0 = r.d + r.length;
    uint64_t k = 0;
    while (k <= kWalkGap && s0 + k < na && d0 + k < nb && !eq(s0 + k, d0 + k)) ++k;
    if (k > kWalkGap || s0 + k >= na || d0 + k >= nb) break;
    uint64_t len = 1;
    while (len < cap && s0 + k + len < na && d0 + k + len < nb && eq(s0 + k + len, d0 + k + len)) ++len;
    r = {s0 + k, d0 + k, len};
    out.push_back(r);
  }
  return out;
}


}  // namespace oans
