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
  bool never = false;
  bool freed = false;  // to go free: covered, or its uncovered bytes rewritten
};

// The runs to plan with `dst` the destination, and what they free. An extent whose
// pieces the runs cover but for at most `max_rewrite` percent of its bytes (and none
// never freed, none compressed) is freed too, its uncovered bytes copied to new extents
// first (Freeing::rewrites).
Freeing Weigh(const Detail& dst, const std::vector<RunKey>& runs, bool same_file, uint64_t min_run,
              uint32_t max_rewrite) {
  const std::vector<Piece> pieces = PiecesOf(dst);
  std::vector<uint64_t> bounds;
  for (const auto& p : pieces) bounds.insert(bounds.end(), {p.lo, p.hi});
  std::sort(bounds.begin(), bounds.end());
  auto boundary = [&](uint64_t x) { return std::binary_search(bounds.begin(), bounds.end(), x); };
  std::vector<RunKey> eligible;
  std::vector<Range> cover, sources;
  for (const auto& r : runs) {
    const Range c = Covered(dst, r.dst_offset, r.length);
    if (r.length < min_run && !(boundary(c.offset) && boundary(c.offset + c.length))) continue;
    eligible.push_back(r);
    cover.push_back(c);
    if (same_file) sources.push_back(Covered(dst, r.offset, r.length));
  }
  cover = UnionRanges(std::move(cover));
  if (same_file) cover = SubtractRanges(cover, UnionRanges(std::move(sources)));
  std::map<std::pair<bool, uint64_t>, ExtentCover> extents;
  for (const auto& p : pieces) {
    ExtentCover& e = extents[p.extent];
    e.never = e.never || p.never;
    e.bytes += p.hi - p.lo;
    for (const Range& g : SubtractRanges({{p.lo, p.hi - p.lo}}, cover)) e.uncovered.push_back(g);
  }
  Freeing f;
  const uint32_t dst_id = runs.empty() ? 0 : runs.front().dst;
  for (auto& [key, e] : extents) {
    uint64_t left = 0;
    bool inside = true;  // every uncovered byte is data of the file (none past its last sector)
    for (const Range& g : e.uncovered) {
      left += g.length;
      inside = inside && g.offset + g.length <= RoundUp(dst.size);
    }
    const bool rewrite = !same_file && !key.first && inside && left * 100 <= e.bytes * uint64_t(max_rewrite);
    e.freed = !e.never && (left == 0 || rewrite);
    if (!e.freed || left == 0) continue;
    for (const Range& g : e.uncovered) {
      if (g.offset >= dst.size) continue;  // the rest of the last sector: nothing to copy
      const uint64_t n = std::min(g.offset + g.length, dst.size) - g.offset;
      f.rewrites.push_back({dst_id, dst_id, g.offset, n, g.offset});
      f.rewritten += n;
    }
  }
  std::vector<Range> freed;
  for (const auto& p : pieces)
    if (extents[p.extent].freed) {
      freed.push_back({p.lo, p.hi - p.lo});
      f.freed += p.hi - p.lo;
    }
  freed = UnionRanges(std::move(freed));
  std::sort(eligible.begin(), eligible.end(), [](const RunKey& a, const RunKey& b) { return a.dst_offset < b.dst_offset; });
  uint64_t done = 0;  // destination bytes below this are planned
  for (const auto& r : eligible) {
    const uint64_t end = r.dst_offset + r.length;
    auto it = std::upper_bound(freed.begin(), freed.end(), r.dst_offset, [](uint64_t x, const Range& g) { return x < g.offset; });
    if (it != freed.begin()) --it;
    for (; it != freed.end() && it->offset < end; ++it) {
      const uint64_t lo = std::max({it->offset, r.dst_offset, done}), hi = std::min(it->offset + it->length, end);
      if (lo >= hi) continue;
      f.runs.push_back({r.src, r.dst, r.offset + (lo - r.dst_offset), hi - lo, lo});
      done = hi;
    }
  }
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
      limit_(std::max<size_t>(4096, st.o.memory / 16 / sizeof(RunKey))),
      deferred_(st.dir, st.o.memory / 16) {
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
  const Freeing f0 = FreeingRuns(*s, *dst, runs_, min_run_, bookends, ways);
  const Freeing f = bookends && st_.o.max_rewrite ? FreeingRuns(*s, *dst, runs_, min_run_, bookends, ways, st_.o.max_rewrite)
                                                  : Freeing();
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
    if (st_.partial_dest[d]) st_.dest_twice[d] = true;
    st_.partial_dest[d] = true;
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
  for (const auto& r : f.runs)
    for (const Range& g : SubtractRanges({{r.dst_offset, r.length}}, planned))
      OANS_RETURN_IF_ERROR(deferred_.Add({r.src, r.dst, r.offset + (g.offset - r.dst_offset), g.length, g.offset}));
  for (const auto& r : f.rewrites) OANS_RETURN_IF_ERROR(deferred_.Add({other, dst, kRewrite, r.length, r.offset}));
  return Status::Ok();
}

Status PairRuns::Finish() {
  OANS_RETURN_IF_ERROR(Flush());
  uint32_t taken = UINT32_MAX;  // the destination of the last pair taken
  bool take = false;
  uint64_t extra = 0;  // partial duplicates planned besides
  OANS_RETURN_IF_ERROR(deferred_.Drain([&](const RunKey& k) -> Status {
    if (k.offset == kMarker) {
      // Only the pair's own runs without rewriting may go into the destination so far.
      take = k.dst != taken && DestCount(k.dst) == int(k.length) && !st_.op_files[k.dst];
      if (take) taken = k.dst, st_.partial_dest[k.dst] = true;
      return Status::Ok();
    }
    if (!take) return Status::Ok();
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
