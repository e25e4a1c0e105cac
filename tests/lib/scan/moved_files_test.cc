#include "lib/scan/moved_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace oans {
namespace {

// Every file gets its own extents and flags back, added in any order: one extent, many,
// enough to cross into a new chunk, and more than a chunk holds.
TEST(MovedFiles, EachFileGetsItsOwnBack) {
  std::mt19937_64 rng(3);
  std::vector<uint64_t> inos(2000);
  std::iota(inos.begin(), inos.end(), 256);
  std::shuffle(inos.begin(), inos.end(), rng);
  auto extents_of = [](uint64_t ino) {
    // Contiguous 4 KiB extents encode in 5 bytes: 300,000 are more than a chunk.
    const size_t n = ino == 700 ? 300000 : ino % 97 == 0 ? 40000 : 1 + ino % 3;
    std::vector<FiemapExtent> x;
    for (size_t k = 0; k < n; ++k) x.push_back({k * 4096, (ino << 36) + k * 4096, 4096, uint32_t(k == n - 1)});
    return x;
  };
  MovedFiles m;
  std::string encoded;
  for (uint64_t ino : inos) {
    MovedFiles::Encode(uint32_t(ino * 7), extents_of(ino), &encoded);
    m.Add(ino, encoded);
  }
  m.Sort();
  ASSERT_EQ(m.size(), inos.size());
  for (uint64_t ino = 256; ino < 2256; ++ino) {
    ASSERT_TRUE(m.Has(ino)) << ino;
    const auto got = m.Find(ino);
    ASSERT_TRUE(got) << ino;
    EXPECT_EQ(got->inode_flags, uint32_t(ino * 7)) << ino;
    const auto want = extents_of(ino);
    ASSERT_EQ(got->extents.size(), want.size()) << ino;
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got->extents[k].logical, want[k].logical) << ino << " " << k;
      ASSERT_EQ(got->extents[k].physical, want[k].physical) << ino << " " << k;
      ASSERT_EQ(got->extents[k].length, want[k].length) << ino << " " << k;
      ASSERT_EQ(got->extents[k].flags, want[k].flags) << ino << " " << k;
    }
  }
  for (uint64_t ino : {uint64_t(0), uint64_t(255), uint64_t(2256), UINT64_MAX}) {
    EXPECT_FALSE(m.Has(ino)) << ino;
    EXPECT_FALSE(m.Find(ino)) << ino;
  }
}

// What they take is what their entries take: an entry larger than a chunk, with a chunk
// of its own, leaves the chunk being filled as it was.
TEST(MovedFiles, TheirBytesAreTheirEntries) {
  std::vector<FiemapExtent> many;
  for (uint64_t k = 0; k < 300000; ++k) many.push_back({k * 4096, (uint64_t(1) << 40) + k * 4096, 4096, 0});
  const std::vector<FiemapExtent> one = {{0, uint64_t(1) << 40, 4096, 0}};
  std::string small, large;
  MovedFiles::Encode(0, one, &small);
  MovedFiles::Encode(0, many, &large);
  ASSERT_GT(large.size(), MovedFiles::kChunkBytes);
  MovedFiles m;
  for (uint64_t ino = 1; ino <= 10; ++ino) m.Add(ino, ino % 2 ? std::string_view(small) : std::string_view(large));
  EXPECT_EQ(m.bytes(), 5 * small.size() + 5 * large.size() + 10 * 16);
  EXPECT_EQ(m.chunks(), 1u + 5);  // the small ones share one
  m.Sort();
  EXPECT_EQ(m.Find(3)->extents.size(), 1u);
  EXPECT_EQ(m.Find(4)->extents.size(), many.size());
}

// An entry that does not read back whole says so, with no extents.
TEST(MovedFiles, ADamagedEntryIsSaidDamaged) {
  std::string encoded;
  MovedFiles::Encode(5, std::vector<FiemapExtent>{{0, 1 << 30, 4096, 1}, {4096, 3u << 30, 4096, 1}}, &encoded);
  MovedFiles m;
  m.Add(7, encoded);
  m.Add(8, std::string_view(encoded).substr(0, encoded.size() - 3));
  m.Sort();
  EXPECT_FALSE(m.Find(7)->damaged);
  EXPECT_EQ(m.Find(7)->extents.size(), 2u);
  const auto cut = m.Find(8);
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->damaged);
  EXPECT_TRUE(cut->extents.empty());
}

TEST(MovedFiles, NoneAddedFindsNone) {
  MovedFiles m;
  m.Sort();
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.Has(1));
  EXPECT_FALSE(m.Find(1));
}

}  // namespace
}  // namespace oans
