// Sector fingerprints and the keys made from them (lib/scan/sector_sums.h).
#include "lib/scan/sector_sums.h"
#include "lib/btrfs/csum.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

TEST(SectorSums, Crc32cMatchesBtrfs) {
  const std::string zeros(4096, '\0');
  EXPECT_EQ(SectorSum(SumKind::kCrc32c, zeros.data(), zeros.size()), 0x98f94189u);  // btrfs's zero block
  EXPECT_EQ(ZeroSectorSum(SumKind::kCrc32c), 0x98f94189u);
}

TEST(SectorSums, TheLastSectorIsPaddedWithZeros) {
  std::string data(4096, '\0');
  for (size_t i = 0; i < 100; ++i) data[i] = char('a' + i % 26);
  for (SumKind k : {SumKind::kCrc32c, SumKind::kXxhash64})
    EXPECT_EQ(SectorSum(k, data.data(), 100), SectorSum(k, data.data(), 4096)) << SumKindName(k);
  EXPECT_NE(SectorSum(SumKind::kCrc32c, data.data(), 4096), SectorSum(SumKind::kXxhash64, data.data(), 4096));
}

TEST(SectorSums, StoredChecksumsGiveTheirLowFourBytes) {
  EXPECT_EQ(StoredSum(std::string("\x89\x41\xf9\x98", 4)), 0x98f94189u);
  EXPECT_EQ(StoredSum(std::string("\x01\x02\x03\x04\xff\xff\xff\xff", 8)), 0x04030201u);
}

// The same sums give keys of another family in every kind: a key of one kind never
// equals a key of another, nor XXH3-128 of data.
TEST(SectorSums, KeysOfDifferentKindsDiffer) {
  std::vector<Hash128> whole;
  for (SumKind k : {SumKind::kCrc32c, SumKind::kXxhash64, SumKind::kSha256}) {
    SumKeys keys(k, 3 * 4096, 128 * 1024);
    for (uint32_t s : {1u, 2u, 3u}) keys.Add(s);
    Hash128 w;
    std::vector<Hash128> blocks;
    std::string sums;
    keys.Finish(&w, &blocks, &sums);
    EXPECT_EQ(blocks.size(), 1u);
    EXPECT_EQ(sums.size(), 12u);
    EXPECT_EQ(SumAt(sums, 2), 3u);
    for (const auto& other : whole) EXPECT_NE(w, other);
    EXPECT_NE(w, HashBytes(sums.data(), sums.size()));
    whole.push_back(w);
  }
}

// A hole gives the zero sector's sums but another whole key than written zeros.
TEST(SectorSums, HolesAreZeroSumsAndMarkTheKey) {
  auto make = [](bool hole) {
    SumKeys keys(SumKind::kCrc32c, 3 * 4096, 4096);
    keys.Add(7);
    if (hole) keys.Hole(1);
    else keys.Add(ZeroSectorSum(SumKind::kCrc32c));
    keys.Add(9);
    Hash128 w;
    std::vector<Hash128> blocks;
    std::string sums;
    keys.Finish(&w, &blocks, &sums);
    return std::make_tuple(w, blocks, sums);
  };
  auto [hw, hb, hs] = make(true);
  auto [dw, db, ds] = make(false);
  EXPECT_EQ(hs, ds);
  EXPECT_EQ(hb, db);
  EXPECT_NE(hw, dw);
}

// HashFile gives every sector's crc32c, the zero sector's for holes.
TEST(SectorSums, HashFileGivesTheSectorsCrc32c) {
  test::TempDir dir;
  std::mt19937_64 rng(5);
  std::string content(3 * 128 * 1024 + 1000, '\0');
  for (auto& c : content) c = char(rng());
  test::WriteFile(dir.Join("f"), content);
  int fd = ::open(dir.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<char> buffer;
  auto h = HashFile(DefaultSys(), fd, content.size(), {128 * 1024, &buffer});
  ::close(fd);
  ASSERT_OK(h.status());
  const size_t n = (content.size() + 4095) / 4096;
  ASSERT_EQ(h->sector_sums.size(), 4 * n);
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(SumAt(h->sector_sums, i),
              SectorSum(SumKind::kCrc32c, content.data() + 4096 * i, std::min<size_t>(4096, content.size() - 4096 * i)));
}

}  // namespace
}  // namespace oans
