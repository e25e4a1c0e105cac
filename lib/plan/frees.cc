#include "lib/plan/frees.h"

#include <algorithm>
#include <map>
#include <utility>

#include "lib/plan/ops.h"
#include "lib/plan/ranges.h"

namespace oans {
namespace {

uint64_t RoundUp(uint64_t x) { return x / 4096 * 4096 + (x % 4096 ? 4096 : 0); }

// An extent of a file, and the extent it is taken to be part of; `never` for a piece no
// run can free: preallocated (it reads as zeros, and holds the extent it is part of),
// shared with another file, or past 2^64 (a damaged index).
struct Piece {
  uint64_t lo, hi;
  std::pair<bool, uint64_t> extent;  // (compressed, its physical address) or (false, physical - logical)
  bool never;
};

std::vector<Piece> PiecesOf(const Detail& d) {
  std::vector<Piece> out;
  for (const auto& e : d.extents) {
    if (e.flags & kUnusableExtent) continue;
    const bool encoded = e.flags & kExtentEncoded;
    const bool wraps = e.logical + e.length < e.logical;
    out.push_back({e.logical, wraps ? UINT64_MAX : e.logical + e.length,
                   {encoded, encoded ? e.physical : e.physical - e.logical},
                   wraps || (e.flags & (kExtentShared | kExtentUnwritten)) != 0});
  }
  return out;
}

// The bytes of the extents a run of `file` covers: up to its end, and when it ends at
// the end of the file, the rest of that last sector too.
Range Covered(const Detail& file, uint64_t offset, uint64_t length) {
  const uint64_t end = offset + length;
  return {offset, (end == file.size ? RoundUp(end) : end) - offset};
}

// Per extent of the destination: all its pieces, and whether any can never be freed.
struct ExtentCover {
  uint64_t bytes = 0;            // its pieces' bytes
  std::vector<Range> uncovered;  // of those, what no eligible run covers
  std::vector<Range> unshared;   // ... what no run at all covers, short ones included
  bool never = false;
  bool freed = false;      // to go free: covered, or its unshared bytes rewritten
  bool rewritten = false;  // ... the latter
};
using Extents = std::map<std::pair<bool, uint64_t>, ExtentCover>;

// Which extents go free, and the rewrites that free them (into f).
void Decide(const Detail& dst, uint32_t dst_id, bool same_file, uint32_t max_rewrite, Extents* extents, Freeing* f) {
  for (auto& [key, e] : *extents) {
    uint64_t left = 0, unshared = 0;
    bool inside = true;  // every byte to copy is data of the file (none past its last sector)
    for (const Range& g : e.uncovered) left += g.length;
    for (const Range& g : e.unshared) {
      unshared += g.length;
      inside = inside && g.offset + g.length <= RoundUp(dst.size);
    }
    e.rewritten = left > 0 && !same_file && !key.first && inside && unshared * 100 <= e.bytes * uint64_t(max_rewrite);
    e.freed = !e.never && (left == 0 || e.rewritten);
    if (!e.freed || !e.rewritten) continue;
    for (const Range& g : e.unshared) {
      if (g.offset >= dst.size) continue;  // the rest of the last sector: nothing to copy
      const uint64_t n = std::min(g.offset + g.length, dst.size) - g.offset;
      f->rewrites.push_back({dst_id, dst_id, g.offset, n, g.offset});
      f->rewritten += n;
    }
  }
}

// Cuts each run (by destination offset) to the ranges it may take (`allowed` of
// `lists`), no destination byte twice, into f->runs.
void Cut(std::vector<std::pair<RunKey, int>> runs, const std::vector<Range>* lists, Freeing* f) {
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first.dst_offset < b.first.dst_offset; });
  uint64_t done = 0;  // destination bytes below this are planned
  for (const auto& [r, list] : runs) {
    const std::vector<Range>& allowed = lists[list];
    const uint64_t end = r.dst_offset + r.length;
    auto it = std::upper_bound(allowed.begin(), allowed.end(), r.dst_offset,
                               [](uint64_t x, const Range& g) { return x < g.offset; });
    if (it != allowed.begin()) --it;
    for (; it != allowed.end() && it->offset < end; ++it) {
      const uint64_t lo = std::max({it->offset, r.dst_offset, done}), hi = std::min(it->offset + it->length, end);
      if (lo >= hi) continue;
      f->runs.push_back({r.src, r.dst, r.offset + (lo - r.dst_offset), hi - lo, lo});
      done = hi;
    }
  }
}

// The runs to plan with `dst` the destination, and what they free. An extent whose
// pieces the runs cover but for at most `max_rewrite` percent of its bytes (and none
// never freed, none compressed) is freed too, its uncovered bytes copied to new extents
// first (Freeing::rewrites); inside such an extent, runs shorter than --min-run are
// shared too (copying their bytes instead would protect nothing from being split).
Freeing Weigh(const Detail& dst, const std::vector<RunKey>& runs, bool same_file, uint64_t min_run,
              uint32_t max_rewrite) {
  const std::vector<Piece> pieces = PiecesOf(dst);
  std::vector<uint64_t> bounds;
  for (const auto& p : pieces) bounds.insert(bounds.end(), {p.lo, p.hi});
  std::sort(bounds.begin(), bounds.end());
  auto boundary = [&](uint64_t x) { return std::binary_search(bounds.begin(), bounds.end(), x); };
  std::vector<std::pair<RunKey, int>> candidates;  // 0: eligible anywhere freed; 1: only where rewritten
  std::vector<Range> cover, all, sources;
  for (const auto& r : runs) {
    const Range c = Covered(dst, r.dst_offset, r.length);
    const bool eligible = r.length >= min_run || (boundary(c.offset) && boundary(c.offset + c.length));
    if (!eligible && (same_file || max_rewrite == 0)) continue;
    candidates.push_back({r, eligible ? 0 : 1});
    all.push_back(c);
    if (eligible) cover.push_back(c);
    if (same_file) sources.push_back(Covered(dst, r.offset, r.length));
  }
  cover = UnionRanges(std::move(cover));
  all = UnionRanges(std::move(all));
  if (same_file) cover = SubtractRanges(cover, UnionRanges(std::move(sources)));
  Extents extents;
  for (const auto& p : pieces) {
    ExtentCover& e = extents[p.extent];
    e.never = e.never || p.never;
    e.bytes += p.hi - p.lo;
    AddUncovered(cover, p.lo, p.hi, &e.uncovered);
    AddUncovered(all, p.lo, p.hi, &e.unshared);
  }
  Freeing f;
  Decide(dst, runs.empty() ? 0 : runs.front().dst, same_file, max_rewrite, &extents, &f);
  std::vector<Range> lists[2];  // freed, and of those, freed by a rewrite
  for (const auto& p : pieces) {
    const ExtentCover& e = extents[p.extent];
    if (!e.freed) continue;
    lists[0].push_back({p.lo, p.hi - p.lo});
    if (e.rewritten) lists[1].push_back({p.lo, p.hi - p.lo});
    f.freed += p.hi - p.lo;
  }
  for (auto& l : lists) l = UnionRanges(std::move(l));
  Cut(std::move(candidates), lists, &f);
  return f;
}

}  // namespace

Freeing FreeingRuns(const Detail& src, const Detail& dst, const std::vector<RunKey>& runs, uint64_t min_run,
                    bool bookends, Ways ways, uint32_t max_rewrite) {
  Freeing f;
  if (!bookends) {
    if (!ways.forward) return f;
    for (const auto& r : runs)
      if (r.length >= min_run) f.runs.push_back(r);
    return f;
  }
  if (runs.empty()) return f;
  const bool same_file = runs.front().src == runs.front().dst;
  Freeing forward = ways.forward ? Weigh(dst, runs, same_file, min_run, max_rewrite) : Freeing();
  if (same_file || !ways.back) return forward;
  std::vector<RunKey> swapped;
  swapped.reserve(runs.size());
  for (const auto& r : runs) swapped.push_back({r.dst, r.src, r.dst_offset, r.length, r.offset});
  Freeing back = Weigh(src, swapped, false, min_run, max_rewrite);
  // The way that frees more, net of what it rewrites; of two equal, the one rewriting less.
  const bool back_better = back.net() != forward.net() ? back.net() > forward.net() : back.rewritten < forward.rewritten;
  return back_better ? back : forward;
}

namespace {
constexpr uint64_t kMarker = UINT64_MAX, kRewrite = UINT64_MAX - 1;  // DeferLess records
}  // namespace

PairRuns::PairRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* out, uint64_t min_run, bool partial)
    : st_(st),
      out_(out),
      min_run_(min_run),
      partial_(partial),
      limit_(std::max<size_t>(4096, st.budget[Use::kWeigh] / 2 / sizeof(RunKey))),
      deferred_(st.dir, st.budget[Use::kWeigh] / 2) {
  if (st.partial_dest.size() < st.details.size()) st.partial_dest.resize(st.details.size());
  if (st.dest_twice.size() < st.details.size()) st.dest_twice.resize(st.details.size());
}

Status PairRuns::Add(const RunKey& r) {
  if (!runs_.empty() && (runs_.front().src != r.src || runs_.front().dst != r.dst || runs_.size() >= limit_))
    OANS_RETURN_IF_ERROR(Flush());
  runs_.push_back(r);
  return Status::Ok();
}

Status PairRuns::Flush() {
  if (runs_.empty()) return Status::Ok();
  OANS_ASSIGN_OR_RETURN(auto src, st_.details.Get(runs_.front().src));
  std::shared_ptr<const Detail> s = src;
  OANS_ASSIGN_OR_RETURN(auto dst, st_.details.Get(runs_.front().dst));
  const bool bookends = st_.header.filesystems[s->fs].type == "btrfs";
  // A file an earlier stage's operation names is never made a destination: those run
  // in the same pass and would share its old extents further. Nor is a member of a
  // whole-file group: its twins keep its extents (they share them, or will).
  auto may_be_dest = [&](uint32_t id) { return !st_.op_files[id] && !(id < st_.grouped.size() && st_.grouped[id]); };
  const Ways ways{may_be_dest(runs_.front().dst), may_be_dest(runs_.front().src)};
  Freeing f0 = FreeingRuns(*s, *dst, runs_, min_run_, bookends, ways);
  const Freeing f = bookends && st_.o.max_rewrite ? FreeingRuns(*s, *dst, runs_, min_run_, bookends, ways, st_.o.max_rewrite)
                                                  : Freeing();
  // Rewriting may free more the other way (f0 frees a few small extents of one file, f
  // the other's large ones): then f0 goes f's way too, or f would be dropped below.
  if (!f.rewrites.empty() && !f.runs.empty() && !f0.runs.empty() && f0.runs.front().dst != f.runs.front().dst &&
      f.net() > f0.freed) {
    const bool forward = f.runs.front().dst == runs_.front().dst;
    f0 = FreeingRuns(*s, *dst, runs_, min_run_, bookends, Ways{forward, !forward});
  }
  std::vector<Range> found;
  for (const auto& r : runs_) found.push_back({r.dst_offset, r.length});
  runs_.clear();
  uint64_t found_bytes = 0, kept = 0;  // destination bytes, each once
  for (const auto& r : UnionRanges(std::move(found))) found_bytes += r.length;
  if (partial_) {
    st_.stats->partial_bytes += found_bytes;
    st_.stats->duplicate_bytes += found_bytes;
  }
  for (const auto& r : f0.runs) {
    kept += r.length;
    OANS_RETURN_IF_ERROR(out_->Add(r));
  }
  if (!f0.runs.empty()) {  // one more pair's runs go into this destination
    const uint32_t d = f0.runs.front().dst;
    const std::pair<uint64_t, uint32_t> emitted{uint64_t(f0.runs.front().src) << 32 | d, d};
    if (st_.partial_dest[d] && emitted != last_emitted_) st_.dest_twice[d] = true;  // not a part of the same pair
    st_.partial_dest[d] = true;
    last_emitted_ = emitted;
  }
  st_.stats->partial_left_bytes += found_bytes > kept ? found_bytes - kept : 0;
  if (!f.rewrites.empty() && !f.runs.empty() && (f0.runs.empty() || f0.runs.front().dst == f.runs.front().dst))
    OANS_RETURN_IF_ERROR(Defer(f, f0));
  return Status::Ok();
}

Status PairRuns::Defer(const Freeing& f, const Freeing& f0) {
  const uint32_t other = f.runs.front().src, dst = f.runs.front().dst;
  std::vector<Range> planned;
  for (const auto& r : f0.runs) planned.push_back({r.dst_offset, r.length});
  planned = UnionRanges(std::move(planned));
  OANS_RETURN_IF_ERROR(deferred_.Add({other, dst, kMarker, f0.runs.empty() ? 0u : 1u, 0}));
  std::vector<Range> left;
  for (const auto& r : f.runs) {
    left.clear();
    AddUncovered(planned, r.dst_offset, r.dst_offset + r.length, &left);
    for (const Range& g : left)
      OANS_RETURN_IF_ERROR(deferred_.Add({r.src, r.dst, r.offset + (g.offset - r.dst_offset), g.length, g.offset}));
  }
  for (const auto& r : f.rewrites) OANS_RETURN_IF_ERROR(deferred_.Add({other, dst, kRewrite, r.length, r.offset}));
  return Status::Ok();
}

Status PairRuns::Finish() {
  OANS_RETURN_IF_ERROR(Flush());
  uint32_t taken = UINT32_MAX;  // the destination of the last pair taken
  // The pair being read: its markers come first (one per part the pair was weighed in).
  struct {
    uint32_t dst = UINT32_MAX, other = UINT32_MAX;
    bool own = false, decided = false, take = false;
  } g;
  RunKey last{};  // parts of a pair may set aside the same rewrite
  uint64_t extra = 0;  // partial duplicates planned besides
  OANS_RETURN_IF_ERROR(deferred_.Drain([&](const RunKey& k) -> Status {
    if (k.dst != g.dst || k.src != g.other) g = {k.dst, k.src, false, false, false};
    if (k.offset == kMarker) {
      g.own = g.own || k.length != 0;
      return Status::Ok();
    }
    if (!g.decided) {
      // Only the pair's own runs without rewriting may go into the destination so far.
      g.decided = true;
      g.take = k.dst != taken && DestCount(k.dst) == int(g.own) && !st_.op_files[k.dst];
      if (g.take) taken = k.dst, st_.partial_dest[k.dst] = true;
    }
    const bool again = k.src == last.src && k.dst == last.dst && k.offset == last.offset && k.dst_offset == last.dst_offset &&
                       k.length == last.length;
    last = k;
    if (!g.take || again) return Status::Ok();
    if (k.offset == kRewrite) {
      st_.stats->rewrite_bytes += k.length;
      return out_->Add({k.dst, k.dst, k.dst_offset, k.length, k.dst_offset});
    }
    extra += k.length;
    return out_->Add(k);
  }));
  st_.stats->partial_left_bytes -= std::min(extra, st_.stats->partial_left_bytes);
  return Status::Ok();
}

}  // namespace oans
