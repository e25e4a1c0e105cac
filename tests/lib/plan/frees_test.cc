// Which partial runs free space (lib/plan/frees.h): on btrfs only those that leave whole
// extents of their destination unreferenced, with the destination that frees more.
#include "lib/plan/frees.h"

#include <gtest/gtest.h>

namespace oans {

bool operator==(const RunKey& a, const RunKey& b) {
  return a.src == b.src && a.dst == b.dst && a.offset == b.offset && a.length == b.length && a.dst_offset == b.dst_offset;
}
std::ostream& operator<<(std::ostream& os, const RunKey& r) {
  return os << "{" << r.src << "@" << r.offset << " -> " << r.dst << "@" << r.dst_offset << ", " << r.length << "}";
}

namespace {

constexpr uint64_t K = 1024;
constexpr uint64_t kMin = 64 * K;

Detail FileOf(std::vector<FiemapExtent> extents) {
  Detail d;
  d.extents = std::move(extents);
  d.size = d.extents.back().logical + d.extents.back().length;
  return d;
}
FiemapExtent At(uint64_t logical, uint64_t physical, uint64_t length, uint32_t flags = 0) {
  return {logical, physical, length, flags};
}
RunKey R(uint32_t src, uint32_t dst, uint64_t offset, uint64_t length, uint64_t dst_offset) {
  return {src, dst, offset, length, dst_offset};
}

const Detail kSource = FileOf({At(0, 1u << 30, 4096 * K)});

TEST(FreeingRuns, ElsewhereRunsOfAtLeastTheMinimumAreKept) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K)});
  const std::vector<RunKey> runs = {R(1, 2, 0, kMin, 0), R(1, 2, 512 * K, kMin - 4 * K, 512 * K)};
  Freeing f = FreeingRuns(kSource, dst, runs, kMin, /*bookends=*/false);
  EXPECT_EQ(f.runs, std::vector<RunKey>{runs[0]});
}

TEST(FreeingRuns, OnBtrfsPartOfAnExtentFreesNothing) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K)});
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 512 * K, 0)}, kMin, true);
  EXPECT_TRUE(f.runs.empty());
  EXPECT_EQ(f.freed, 0u);
  // The whole extent, in two runs: freed.
  f = FreeingRuns(kSource, dst, {R(1, 2, 0, 512 * K, 0), R(1, 2, 2048 * K, 512 * K, 512 * K)}, kMin, true);
  EXPECT_EQ(f.freed, 1024 * K);
  EXPECT_EQ(f.runs.size(), 2u);
}

TEST(FreeingRuns, TheFileWhoseExtentsGoFreeBecomesTheDestination) {
  // File 1 is file 2 behind a 12 KiB header; each is one extent.
  const Detail shifted = FileOf({At(0, 1u << 30, 1036 * K)});
  const Detail body = FileOf({At(0, 8u << 30, 1024 * K)});
  Freeing f = FreeingRuns(body, shifted, {R(2, 1, 0, 1024 * K, 12 * K)}, kMin, true);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 2, 12 * K, 1024 * K, 0)});
  EXPECT_EQ(f.freed, 1024 * K);
}

// An extent rewritten in place at 100 KiB and 112 KiB: the untouched parts stay where
// they were (one distance between physical and logical), the new sectors elsewhere.
Detail Rewritten() {
  const uint64_t p = 8u << 30;
  return FileOf({At(0, p, 100 * K), At(100 * K, 9u << 30, 4 * K), At(104 * K, p + 104 * K, 8 * K),
                 At(112 * K, (9u << 30) + 4 * K, 4 * K), At(116 * K, p + 116 * K, 908 * K)});
}

TEST(FreeingRuns, ThePiecesOfARewrittenExtentGoFreeTogether) {
  const Detail dst = Rewritten();
  const std::vector<RunKey> all = {R(1, 2, 0, 100 * K, 0), R(1, 2, 104 * K, 8 * K, 104 * K),
                                   R(1, 2, 116 * K, 908 * K, 116 * K)};
  Freeing f = FreeingRuns(kSource, dst, all, kMin, true);
  EXPECT_EQ(f.runs, all);  // the 8 KiB run replaces a whole piece: shorter than --min-run, kept
  EXPECT_EQ(f.freed, 1016 * K);
  // Without that piece the extent stays: nothing is freed, nothing planned.
  f = FreeingRuns(kSource, dst, {all[0], all[2]}, kMin, true);
  EXPECT_TRUE(f.runs.empty());
  // A short run that splits a piece is not eligible.
  f = FreeingRuns(kSource, dst, {all[0], R(1, 2, 104 * K, 4 * K, 104 * K), all[2]}, kMin, true);
  EXPECT_TRUE(f.runs.empty());
}

TEST(FreeingRuns, AnExtentSharedWithAnotherFileIsNotFreed) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K, kExtentShared)});
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 1024 * K, 0)}, kMin, true);
  EXPECT_TRUE(f.runs.empty());
}

TEST(FreeingRuns, InsideOneFileTheSourceKeepsItsExtent) {
  // 1 MiB, 40 KiB, then the first 1 MiB again: in one extent nothing can go free...
  const Detail one = FileOf({At(0, 8u << 30, 2088 * K)});
  const RunKey repeat = R(1, 1, 0, 1024 * K, 1064 * K);
  EXPECT_TRUE(FreeingRuns(one, one, {repeat}, kMin, true).runs.empty());
  // ...but the repeat written as an extent of its own goes free.
  const Detail two = FileOf({At(0, 8u << 30, 1064 * K), At(1064 * K, 9u << 30, 1024 * K)});
  Freeing f = FreeingRuns(two, two, {repeat}, kMin, true);
  EXPECT_EQ(f.runs, std::vector<RunKey>{repeat});
  EXPECT_EQ(f.freed, 1024 * K);
}

TEST(FreeingRuns, NoDestinationByteIsPlannedTwice) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K)});
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 768 * K, 0), R(1, 2, 2048 * K, 512 * K, 512 * K)}, kMin, true);
  EXPECT_EQ(f.runs, (std::vector<RunKey>{R(1, 2, 0, 768 * K, 0), R(1, 2, 2304 * K, 256 * K, 768 * K)}));
}

TEST(FreeingRuns, APreallocatedPartKeepsItsExtent) {
  // 1 MiB preallocated, its first 256 KiB written: one extent on disk.
  const Detail dst = FileOf({At(0, 8u << 30, 256 * K), At(256 * K, (8u << 30) + 256 * K, 768 * K, kExtentUnwritten)});
  EXPECT_TRUE(FreeingRuns(kSource, dst, {R(1, 2, 0, 256 * K, 0)}, kMin, true).runs.empty());
}

TEST(FreeingRuns, AnExtentPast2To64IsNeverFreed) {
  Detail dst = FileOf({At(0, 8u << 30, 64 * K)});
  dst.extents.push_back(At(UINT64_MAX - 4 * K, 9u << 30, 72 * K));  // a damaged index
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 64 * K, 0), R(1, 2, 0, 64 * K, UINT64_MAX - 4 * K)}, kMin, true);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 2, 0, 64 * K, 0)});
}

TEST(FreeingRuns, ARunToTheEndOfTheFileCoversItsLastSector) {
  // 1 MiB and 100 bytes: the extent's length is rounded up to the sector.
  Detail dst = FileOf({At(0, 8u << 30, 1028 * K)});
  dst.size = 1024 * K + 100;
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 1024 * K + 100, 0)}, kMin, true);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 2, 0, 1024 * K + 100, 0)});
  EXPECT_EQ(f.freed, 1028 * K);
  // Short of the end, the last sector keeps the extent.
  EXPECT_TRUE(FreeingRuns(kSource, dst, {R(1, 2, 0, 1024 * K, 0)}, kMin, true).runs.empty());
}

TEST(FreeingRuns, InsideOneFileAnExtentThatIsASourceStays) {
  // Three extents of the same 1 MiB; runs from the first into the second and from the
  // second into the third: the second is a source, so only the third goes free.
  const Detail three = FileOf({At(0, 8u << 30, 1024 * K), At(1024 * K, 9u << 30, 1024 * K), At(2048 * K, 10u << 30, 1024 * K)});
  Freeing f = FreeingRuns(three, three, {R(1, 1, 0, 1024 * K, 1024 * K), R(1, 1, 1024 * K, 1024 * K, 2048 * K)}, kMin, true);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 1, 1024 * K, 1024 * K, 2048 * K)});
  EXPECT_EQ(f.freed, 1024 * K);
}

TEST(FreeingRuns, OnlyTheAllowedWays) {
  const Detail shifted = FileOf({At(0, 1u << 30, 1036 * K)});
  const Detail body = FileOf({At(0, 8u << 30, 1024 * K)});
  const std::vector<RunKey> runs = {R(2, 1, 0, 1024 * K, 12 * K)};
  // Body, the destination that frees, may not be one (an operation names it already).
  EXPECT_TRUE(FreeingRuns(body, shifted, runs, kMin, true, {true, false}).runs.empty());
  EXPECT_TRUE(FreeingRuns(body, shifted, runs, kMin, true, {false, false}).runs.empty());
  EXPECT_EQ(FreeingRuns(body, shifted, runs, kMin, true, {false, true}).runs.size(), 1u);
  // Elsewhere only the way found is planned, when allowed.
  EXPECT_TRUE(FreeingRuns(body, shifted, runs, kMin, false, {false, true}).runs.empty());
  EXPECT_EQ(FreeingRuns(body, shifted, runs, kMin, false, {true, false}).runs, runs);
}

TEST(FreeingRuns, ACompressedExtentIsItsOwnExtent) {
  // Two compressed extents whose physical minus logical happen to agree are not one.
  const Detail dst = FileOf({At(0, 8u << 30, 128 * K, kExtentEncoded), At(128 * K, (8u << 30) + 128 * K, 128 * K, kExtentEncoded)});
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 128 * K, 0)}, kMin, true);
  EXPECT_EQ(f.freed, 128 * K);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 2, 0, 128 * K, 0)});
}

// A file written in one go that differs from its source in a few scattered sectors: its
// one extent goes free only when those sectors are copied into new extents first.
TEST(FreeingRuns, AnExtentCoveredButForAFewSectorsIsFreedByRewritingThem) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K)});
  const std::vector<RunKey> runs = {R(1, 2, 0, 500 * K, 0), R(1, 2, 504 * K, 516 * K, 504 * K)};  // 4 KiB differ at 500K, 4 KiB at the end
  EXPECT_TRUE(FreeingRuns(kSource, dst, runs, kMin, true, {}, 0).runs.empty());  // never rewrite: nothing
  Freeing f = FreeingRuns(kSource, dst, runs, kMin, true, {}, 10);
  EXPECT_EQ(f.runs, runs);
  EXPECT_EQ(f.freed, 1024 * K);
  EXPECT_EQ(f.rewrites, (std::vector<RunKey>{R(2, 2, 500 * K, 4 * K, 500 * K), R(2, 2, 1020 * K, 4 * K, 1020 * K)}));
  EXPECT_EQ(f.rewritten, 8 * K);
  EXPECT_EQ(f.net(), 1016 * K);
}

TEST(FreeingRuns, InsideAnExtentFreedByARewriteShortRunsAreSharedNotCopied) {
  const Detail dst = FileOf({At(0, 8u << 30, 1024 * K)});
  // A 32 KiB run (shorter than --min-run) between two changed sectors.
  const std::vector<RunKey> runs = {R(1, 2, 0, 500 * K, 0), R(1, 2, 504 * K, 32 * K, 504 * K),
                                    R(1, 2, 540 * K, 484 * K, 540 * K)};
  Freeing f = FreeingRuns(kSource, dst, runs, kMin, true, {}, 10);
  EXPECT_EQ(f.runs, runs);
  EXPECT_EQ(f.rewrites, (std::vector<RunKey>{R(2, 2, 500 * K, 4 * K, 500 * K), R(2, 2, 536 * K, 4 * K, 536 * K)}));
  EXPECT_EQ(f.freed, 1024 * K);
  // Elsewhere the minimum holds: with nothing to rewrite, the short run is not planned.
  const Detail two = FileOf({At(0, 8u << 30, 500 * K), At(500 * K, 9u << 30, 524 * K)});
  f = FreeingRuns(kSource, two, {R(1, 2, 0, 500 * K, 0), R(1, 2, 600 * K, 32 * K, 600 * K)}, kMin, true, {}, 10);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(1, 2, 0, 500 * K, 0)});
}

TEST(FreeingRuns, NoMoreIsRewrittenThanTheLimitAllows) {
  const Detail dst = FileOf({At(0, 8u << 30, 1000 * K)});
  // 900 KiB covered, 100 KiB (10 %) not: kept at 10 %, refused at 9 %.
  const std::vector<RunKey> runs = {R(1, 2, 0, 900 * K, 0)};
  EXPECT_EQ(FreeingRuns(kSource, dst, runs, kMin, true, {}, 10).rewritten, 100 * K);
  Freeing f = FreeingRuns(kSource, dst, runs, kMin, true, {}, 9);
  EXPECT_TRUE(f.runs.empty());
  EXPECT_TRUE(f.rewrites.empty());
  EXPECT_EQ(f.freed, 0u);
}

TEST(FreeingRuns, NothingIsRewrittenOfACompressedSharedOrPreallocatedExtentOrInsideOneFile) {
  const std::vector<RunKey> runs = {R(1, 2, 0, 120 * K, 0)};
  for (uint32_t flags : {kExtentEncoded, kExtentShared, kExtentUnwritten}) {
    const Detail dst = FileOf({At(0, 8u << 30, 128 * K, flags)});
    Freeing f = FreeingRuns(kSource, dst, runs, kMin, true, {true, false}, 50);
    EXPECT_TRUE(f.runs.empty()) << flags;
    EXPECT_TRUE(f.rewrites.empty()) << flags;
  }
  // Its first 480 KiB again at 512 KiB, in a second extent of 512 KiB: inside one file,
  // the 32 KiB left are not rewritten.
  const Detail one = FileOf({At(0, 8u << 30, 512 * K), At(512 * K, 9u << 30, 512 * K)});
  Freeing f = FreeingRuns(one, one, {R(1, 1, 0, 480 * K, 512 * K)}, kMin, true, {}, 50);
  EXPECT_TRUE(f.rewrites.empty());
  EXPECT_TRUE(f.runs.empty());
}

TEST(FreeingRuns, TheTailPastTheEndOfTheFileIsNotCopiedAndTheWayThatFreesMoreNetWins) {
  // dst ends 1000 bytes into its last sector; the run covers all but the last 8 KiB of data.
  Detail dst = FileOf({At(0, 8u << 30, 1028 * K)});
  dst.size = 1024 * K + 1000;
  Freeing f = FreeingRuns(kSource, dst, {R(1, 2, 0, 1016 * K, 0)}, kMin, true, {true, false}, 10);
  EXPECT_EQ(f.rewrites, std::vector<RunKey>{R(2, 2, 1016 * K, 8 * K + 1000, 1016 * K)});
  EXPECT_EQ(f.freed, 1028 * K);
  // Rewriting 64 KiB to free 1024 KiB, or freeing the other file's 960 KiB extent with
  // nothing to rewrite: the same space either way, so the way without a rewrite is chosen.
  const Detail whole = FileOf({At(0, 8u << 30, 1024 * K)});
  const Detail small = FileOf({At(0, 9u << 30, 960 * K)});
  f = FreeingRuns(small, whole, {R(1, 2, 0, 960 * K, 0)}, kMin, true, {}, 10);
  EXPECT_EQ(f.runs, std::vector<RunKey>{R(2, 1, 0, 960 * K, 0)});
  EXPECT_TRUE(f.rewrites.empty());
  // Without that way, the rewrite.
  f = FreeingRuns(small, whole, {R(1, 2, 0, 960 * K, 0)}, kMin, true, {true, false}, 10);
  EXPECT_EQ(f.rewritten, 64 * K);
}

}  // namespace
}  // namespace oans
