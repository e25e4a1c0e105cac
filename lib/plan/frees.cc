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

// The runs to plan with `dst` the destination, and what they free.
Freeing Weigh(const Detail& dst, const std::vector<RunKey>& runs, bool same_file, uint64_t min_run) {
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
  std::map<std::pair<bool, uint64_t>, bool> whole;  // extent -> all its pieces covered, none never
  for (const auto& p : pieces) {
    auto it = whole.emplace(p.extent, true).first;
    it->second = it->second && !p.never && RangesHold(cover, p.lo, p.hi);
  }
  Freeing f;
  std::vector<Range> freed;
  for (const auto& p : pieces)
    if (whole[p.extent]) {
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
                    bool bookends, Ways ways) {
  Freeing f;
  if (!bookends) {
    if (!ways.forward) return f;
    for (const auto& r : runs)
      if (r.length >= min_run) f.runs.push_back(r);
    return f;
  }
  if (runs.empty()) return f;
  const bool same_file = runs.front().src == runs.front().dst;
  Freeing forward = ways.forward ? Weigh(dst, runs, same_file, min_run) : Freeing();
  if (same_file || !ways.back) return forward;
  std::vector<RunKey> swapped;
  swapped.reserve(runs.size());
  for (const auto& r : runs) swapped.push_back({r.dst, r.src, r.dst_offset, r.length, r.offset});
  Freeing back = Weigh(src, swapped, false, min_run);
  return back.freed > forward.freed ? back : forward;
}

PairRuns::PairRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* out, uint64_t min_run, bool partial)
    : st_(st),
      out_(out),
      min_run_(min_run),
      partial_(partial),
      limit_(std::max<size_t>(4096, st.o.memory / 16 / sizeof(RunKey))) {
  if (st.partial_dest.size() < st.details.size()) st.partial_dest.resize(st.details.size());
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
  // in the same pass and would share its old extents further.
  const Ways ways{!st_.op_files[runs_.front().dst], !st_.op_files[runs_.front().src]};
  Freeing f = FreeingRuns(*s, *dst, runs_, min_run_, bookends, ways);
  std::vector<Range> found;
  for (const auto& r : runs_) found.push_back({r.dst_offset, r.length});
  runs_.clear();
  uint64_t found_bytes = 0, kept = 0;  // destination bytes, each once
  for (const auto& r : UnionRanges(std::move(found))) found_bytes += r.length;
  if (partial_) {
    st_.stats->partial_bytes += found_bytes;
    st_.stats->duplicate_bytes += found_bytes;
  }
  for (const auto& r : f.runs) {
    kept += r.length;
    st_.partial_dest[r.dst] = true;
    OANS_RETURN_IF_ERROR(out_->Add(r));
  }
  st_.stats->partial_left_bytes += found_bytes > kept ? found_bytes - kept : 0;
  return Status::Ok();
}

}  // namespace oans
