// The range arithmetic of the source and block stages (lib/plan/ranges.h).
#include "lib/plan/ranges.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

constexpr uint64_t kNone = UINT64_MAX;

// ---- SharedRanges / UnsharedRanges / PhysicalAt ------------------------------------

TEST(Ranges, PhysicalAt) {
  std::vector<FiemapExtent> ex = {{0, 1000000, 8192, 0},
                                  {16384, 5000000, 8192, 0},
                                  {24576, 9000000, 8192, kExtentEncoded},
                                  {32768, 7000000, 4096, kExtentDelalloc},
                                  {36864, 0, 4096, kExtentInline | kExtentLast}};
  EXPECT_EQ(PhysicalAt(ex, 0), 1000000u);
  EXPECT_EQ(PhysicalAt(ex, 100), 1000100u);
  EXPECT_EQ(PhysicalAt(ex, 8191), 1008191u);
  EXPECT_EQ(PhysicalAt(ex, 8192), kNone);  // hole
  EXPECT_EQ(PhysicalAt(ex, 16383), kNone);
  EXPECT_EQ(PhysicalAt(ex, 16384), 5000000u);
  EXPECT_EQ(PhysicalAt(ex, 20000), 5003616u);
  // Encoded (compressed) extents: no byte-for-byte offset inside; the extent's start.
  EXPECT_EQ(PhysicalAt(ex, 24576), 9000000u);
  EXPECT_EQ(PhysicalAt(ex, 30000), 9000000u);
  EXPECT_EQ(PhysicalAt(ex, 32768), kNone);  // delalloc: not placed yet
  EXPECT_EQ(PhysicalAt(ex, 36864), kNone);  // inline
  EXPECT_EQ(PhysicalAt(ex, 40960), kNone);  // past the end
  EXPECT_EQ(PhysicalAt({}, 0), kNone);
  EXPECT_EQ(PhysicalAt({{4096, 100, 4096, 0}}, 0), kNone);  // before the first extent
}

TEST(Ranges, SharedRangesSameMapping) {
  const uint64_t P = 1 << 30;
  // Identical extents: all shared.
  std::vector<FiemapExtent> a = {{0, P, 65536, 0}, {65536, 2 * P, 65536, 0}};
  EXPECT_EQ(SharedRanges(a, a, 131072), (std::vector<Range>{{0, 131072}}));
  // The second extent differs.
  std::vector<FiemapExtent> b = {{0, P, 65536, 0}, {65536, 3 * P, 65536, 0}};
  EXPECT_EQ(SharedRanges(a, b, 131072), (std::vector<Range>{{0, 65536}}));
  // One extent on one side, the same bytes split in two on the other: merged.
  std::vector<FiemapExtent> one = {{0, P, 131072, 0}};
  std::vector<FiemapExtent> two = {{0, P, 65536, 0}, {65536, P + 65536, 65536, 0}};
  EXPECT_EQ(SharedRanges(one, two, 131072), (std::vector<Range>{{0, 131072}}));
  // Same physical data at a different file offset is not "the same at the same offset".
  std::vector<FiemapExtent> shifted = {{0, P + 4096, 131072, 0}};
  EXPECT_TRUE(SharedRanges(one, shifted, 131072).empty());
  // Clipped at EOF when the last extent is rounded up.
  std::vector<FiemapExtent> up = {{0, P, 131072, 0}};
  EXPECT_EQ(SharedRanges(up, up, 100000), (std::vector<Range>{{0, 100000}}));
  // Holes on either side share nothing.
  std::vector<FiemapExtent> holey = {{0, P, 4096, 0}, {65536, P + 65536, 65536, 0}};
  EXPECT_EQ(SharedRanges(one, holey, 131072), (std::vector<Range>{{0, 4096}, {65536, 65536}}));
  EXPECT_TRUE(SharedRanges(one, {}, 131072).empty());
}

TEST(Ranges, SharedRangesFlags) {
  const uint64_t P = 1 << 30;
  std::vector<FiemapExtent> plain = {{0, P, 65536, 0}};
  std::vector<FiemapExtent> delalloc = {{0, P, 65536, kExtentDelalloc}};
  std::vector<FiemapExtent> unknown = {{0, P, 65536, kExtentUnknown}};
  std::vector<FiemapExtent> inl = {{0, P, 65536, kExtentInline}};
  EXPECT_TRUE(SharedRanges(plain, delalloc, 65536).empty());
  EXPECT_TRUE(SharedRanges(delalloc, delalloc, 65536).empty());
  EXPECT_TRUE(SharedRanges(unknown, unknown, 65536).empty());
  EXPECT_TRUE(SharedRanges(inl, inl, 65536).empty());
  // Shared flag itself does not matter.
  std::vector<FiemapExtent> shared_flag = {{0, P, 65536, kExtentShared | kExtentLast}};
  EXPECT_EQ(SharedRanges(plain, shared_flag, 65536), (std::vector<Range>{{0, 65536}}));
  // Encoded extents: physical and logical must both agree.
  std::vector<FiemapExtent> enc = {{0, P, 131072, kExtentEncoded}};
  std::vector<FiemapExtent> enc_split = {{0, P, 65536, kExtentEncoded}, {65536, P, 65536, kExtentEncoded}};
  EXPECT_EQ(SharedRanges(enc, enc, 131072), (std::vector<Range>{{0, 131072}}));
  EXPECT_EQ(SharedRanges(enc, enc_split, 131072), (std::vector<Range>{{0, 65536}}));
  std::vector<FiemapExtent> enc_other = {{0, P + 4096, 131072, kExtentEncoded}};
  EXPECT_TRUE(SharedRanges(enc, enc_other, 131072).empty());
}

TEST(Ranges, UnsharedRanges) {
  // Nothing shared: the whole file.
  EXPECT_EQ(UnsharedRanges({}, 20000, 4096), (std::vector<Range>{{0, 20000}}));
  // Everything shared: nothing.
  EXPECT_TRUE(UnsharedRanges({{0, 20000}}, 20000, 4096).empty());
  // Aligned hole in the middle.
  EXPECT_EQ(UnsharedRanges({{0, 4096}, {12288, 7712}}, 20000, 4096), (std::vector<Range>{{4096, 8192}}));
  // Unaligned shared range: the unshared parts widen outward to block boundaries.
  EXPECT_EQ(UnsharedRanges({{1000, 10000}}, 20000, 4096), (std::vector<Range>{{0, 4096}, {8192, 20000 - 8192}}));
  // Widening that makes two unshared parts meet merges them.
  EXPECT_EQ(UnsharedRanges({{5000, 100}}, 20000, 4096), (std::vector<Range>{{0, 20000}}));
  // The tail ends at EOF, not past it.
  EXPECT_EQ(UnsharedRanges({{0, 8192}}, 10000, 4096), (std::vector<Range>{{8192, 1808}}));
  for (const auto& r : UnsharedRanges({{3000, 5000}, {20000, 3000}}, 30000, 4096)) {
    EXPECT_EQ(r.offset % 4096, 0u);
    EXPECT_TRUE(r.length % 4096 == 0 || r.offset + r.length == 30000) << r.offset << "+" << r.length;
  }
}

TEST(Ranges, DataAndIntersectRanges) {
  std::vector<FiemapExtent> ex = {{0, 1 << 20, 8192, 0}, {65536, 2 << 20, 1000, 0}, {70000, 3 << 20, 5000, 0}};
  // Widened to 4 KiB and merged where they touch; clipped at the size.
  EXPECT_EQ(DataRanges(ex, 73000, 4096), (std::vector<Range>{{0, 8192}, {65536, 73000 - 65536}}));
  EXPECT_TRUE(DataRanges({}, 100, 4096).empty());
  EXPECT_EQ(IntersectRanges({{0, 100}, {200, 100}}, {{50, 200}}), (std::vector<Range>{{50, 50}, {200, 50}}));
  EXPECT_TRUE(IntersectRanges({{0, 100}}, {{100, 100}}).empty());
  EXPECT_TRUE(IntersectRanges({}, {{0, 100}}).empty());
}

TEST(Ranges, AddUncoveredGivesTheGapsInsideTheRange) {
  const std::vector<Range> cover = {{0, 10}, {20, 10}, {40, 10}};
  std::vector<Range> out;
  AddUncovered(cover, 5, 45, &out);
  EXPECT_EQ(out, (std::vector<Range>{{10, 10}, {30, 10}}));
  out.clear();
  AddUncovered(cover, 50, 60, &out);  // past every range
  EXPECT_EQ(out, (std::vector<Range>{{50, 10}}));
  out.clear();
  AddUncovered(cover, 21, 29, &out);  // inside one
  EXPECT_TRUE(out.empty());
  AddUncovered({}, 3, 4, &out);
  EXPECT_EQ(out, (std::vector<Range>{{3, 1}}));
}

TEST(Ranges, UnionSubtractAndHold) {
  const std::vector<Range> u = UnionRanges({{50, 10}, {0, 10}, {10, 5}, {30, 0}, {55, 20}});
  EXPECT_EQ(u, (std::vector<Range>{{0, 15}, {50, 25}}));
  EXPECT_EQ(SubtractRanges(u, {{5, 2}, {60, 100}}), (std::vector<Range>{{0, 5}, {7, 8}, {50, 10}}));
  EXPECT_TRUE(RangesHold(u, 50, 75));
  EXPECT_FALSE(RangesHold(u, 10, 20));
  EXPECT_FALSE(RangesHold(u, 40, 45));
}

TEST(Ranges, LayoutsAndWrittenBlocks) {
  const std::vector<FiemapExtent> a = {{0, 1 << 20, 8192, 0}, {8192, 5 << 20, 4096, kExtentLast}};
  std::vector<FiemapExtent> b = a;
  EXPECT_TRUE(SameLayout(a, b));
  EXPECT_EQ(LayoutOf(a), LayoutOf(b));
  EXPECT_NE(LayoutOf(a), 0u);
  b[1].physical += 4096;
  EXPECT_FALSE(SameLayout(a, b));
  EXPECT_NE(LayoutOf(a), LayoutOf(b));
  EXPECT_TRUE(LayoutLess(a, b));
  EXPECT_FALSE(LayoutLess(b, a));
  EXPECT_FALSE(SameLayout({}, {}));  // nothing mapped: nothing known to be shared
  EXPECT_EQ(LayoutOf({}), 0u);
  const std::vector<FiemapExtent> inline_data = {{0, 0, 4096, kExtentInline | kExtentLast}};
  EXPECT_FALSE(SameLayout(inline_data, inline_data));
  EXPECT_EQ(LayoutOf(inline_data), 0u);
  const std::vector<FiemapExtent> prealloc = {{0, 1 << 20, 8192, 0}, {8192, 2 << 20, 8192, kExtentUnwritten}};
  EXPECT_TRUE(Written(prealloc, 0));
  EXPECT_TRUE(Written(prealloc, 8191));
  EXPECT_FALSE(Written(prealloc, 8192));   // preallocated: reads as zeros
  EXPECT_FALSE(Written(prealloc, 16384));  // past the end: a hole
}

}  // namespace
}  // namespace oans
