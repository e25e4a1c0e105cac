#include "lib/plan/ranges.h"

#include <algorithm>
#include <tuple>

#include <xxhash.h>

namespace oans {
namespace {

bool SameMapping(const FiemapExtent& a, const FiemapExtent& b) {
  if ((a.flags | b.flags) & kUnusableExtent) return false;
  if ((a.flags | b.flags) & kExtentEncoded) return a.physical == b.physical && a.logical == b.logical;
  return a.physical - a.logical == b.physical - b.logical;
}

}  // namespace

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

bool SameLayout(const std::vector<FiemapExtent>& x, const std::vector<FiemapExtent>& y) {
  if (x.empty() || x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].logical != y[i].logical || x[i].physical != y[i].physical || x[i].length != y[i].length ||
        (x[i].flags & kUnusableExtent))
      return false;
  return true;
}

bool LayoutLess(const std::vector<FiemapExtent>& x, const std::vector<FiemapExtent>& y) {
  return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end(),
                                      [](const FiemapExtent& p, const FiemapExtent& q) {
                                        return std::tie(p.logical, p.physical, p.length) <
                                               std::tie(q.logical, q.physical, q.length);
                                      });
}

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

std::vector<Range> UnionRanges(std::vector<Range> v) {
  std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) { return a.offset < b.offset; });
  std::vector<Range> out;
  for (const auto& r : v) {
    if (r.length == 0) continue;
    if (!out.empty() && out.back().offset + out.back().length >= r.offset)
      out.back().length = std::max(out.back().offset + out.back().length, r.offset + r.length) - out.back().offset;
    else
      out.push_back(r);
  }
  return out;
}

std::vector<Range> SubtractRanges(const std::vector<Range>& a, const std::vector<Range>& b) {
  std::vector<Range> out;
  size_t j = 0;
  for (const auto& r : a) {
    uint64_t lo = r.offset;
    const uint64_t hi = r.offset + r.length;
    while (j < b.size() && b[j].offset + b[j].length <= lo) ++j;
    for (size_t k = j; k < b.size() && b[k].offset < hi && lo < hi; ++k) {
      if (b[k].offset > lo) out.push_back({lo, b[k].offset - lo});
      lo = std::max(lo, b[k].offset + b[k].length);
    }
    if (lo < hi) out.push_back({lo, hi - lo});
  }
  return out;
}

void AddUncovered(const std::vector<Range>& cover, uint64_t lo, uint64_t hi, std::vector<Range>* out) {
  auto it = std::upper_bound(cover.begin(), cover.end(), lo,
                             [](uint64_t x, const Range& r) { return x < r.offset + r.length; });
  for (; it != cover.end() && it->offset < hi && lo < hi; ++it) {
    if (it->offset > lo) out->push_back({lo, it->offset - lo});
    lo = std::max(lo, it->offset + it->length);
  }
  if (lo < hi) out->push_back({lo, hi - lo});
}

bool RangesHold(const std::vector<Range>& cover, uint64_t lo, uint64_t hi) {
  auto it = std::upper_bound(cover.begin(), cover.end(), lo, [](uint64_t x, const Range& r) { return x < r.offset; });
  if (it == cover.begin()) return false;
  --it;
  return hi <= it->offset + it->length;
}

}  // namespace oans
