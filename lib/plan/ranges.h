// Range arithmetic on a file's extents (FIEMAP, sorted by logical offset).
// Which byte ranges two files already share, and which hold data.
// Where a logical offset lies on disk.
// Pure functions, callable from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// Extents whose physical address means nothing to share: inline, delayed, unknown.
inline constexpr uint32_t kUnusableExtent = kExtentInline | kExtentDelalloc | kExtentUnknown;

struct Range {
  uint64_t offset = 0, length = 0;
  friend bool operator==(const Range&, const Range&) = default;
};

// Byte ranges of [0, size) where `dst` maps the same physical data as `src` at the same
// file offset.
std::vector<Range> SharedRanges(const std::vector<FiemapExtent>& src, const std::vector<FiemapExtent>& dst,
                                uint64_t size);
// Complement of `shared` in [0, size), widened to `align` boundaries (or EOF).
std::vector<Range> UnsharedRanges(const std::vector<Range>& shared, uint64_t size, uint64_t align);
// Ranges of [0, size) holding data (not holes), widened to `align` boundaries.
std::vector<Range> DataRanges(const std::vector<FiemapExtent>& extents, uint64_t size, uint64_t align);
// Ranges present in both sorted, disjoint lists.
std::vector<Range> IntersectRanges(const std::vector<Range>& a, const std::vector<Range>& b);
// `v` sorted and merged (touching or overlapping ranges joined, empty ones dropped).
std::vector<Range> UnionRanges(std::vector<Range> v);
// `a` without `b` (both sorted and merged).
std::vector<Range> SubtractRanges(const std::vector<Range>& a, const std::vector<Range>& b);
// Appends to *out the parts of [lo, hi) that no range of `cover` (sorted and merged)
// holds; a binary search, then only the ranges that meet it.
void AddUncovered(const std::vector<Range>& cover, uint64_t lo, uint64_t hi, std::vector<Range>* out);
// Whether [lo, hi) lies inside one range of `cover` (sorted and merged).
bool RangesHold(const std::vector<Range>& cover, uint64_t lo, uint64_t hi);
// Physical address of `logical` in `extents`, or UINT64_MAX for a hole or unknown.
uint64_t PhysicalAt(const std::vector<FiemapExtent>& extents, uint64_t logical);
// Whether `logical` lies in written data: not a hole, not inline or unknown, and not a
// preallocated (unwritten) extent, which reads as zeros and has nothing to share.
bool Written(const std::vector<FiemapExtent>& extents, uint64_t logical);
// A hash of the extent list, 0 when it is empty or unusable: files with equal nonzero
// layouts share all their data.
uint64_t LayoutOf(const std::vector<FiemapExtent>& extents);
// Whether two files map exactly the same extents (logical, physical, length), all usable.
bool SameLayout(const std::vector<FiemapExtent>& x, const std::vector<FiemapExtent>& y);
// Lexicographic order of extent lists by (logical, physical, length).
bool LayoutLess(const std::vector<FiemapExtent>& x, const std::vector<FiemapExtent>& y);

}  // namespace oans
