#include "lib/base/extent_code.h"

#include <gtest/gtest.h>

#include <random>

namespace oans {
namespace {

std::vector<FiemapExtent> RandomExtents(std::mt19937_64& rng, size_t n) {
  std::vector<FiemapExtent> x;
  uint64_t logical = rng() % 4096;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t length = 1 + rng() % (1 << 20);
    // Physical anywhere, above or below the previous one, some of them next to it.
    const uint64_t physical = i && rng() % 3 == 0 ? x.back().physical + x.back().length : rng() >> (rng() % 40);
    x.push_back({logical, physical, length, uint32_t(rng())});
    logical += length + (rng() % 2 ? 0 : rng() % (1 << 16));
  }
  return x;
}

TEST(ExtentCode, ExtentsAndVarintsReadBackAsWritten) {
  std::mt19937_64 rng(7);
  for (size_t n : {0, 1, 2, 5, 300}) {
    const auto x = RandomExtents(rng, n);
    std::string s;
    PutVarint(&s, UINT64_MAX);
    PutExtents(&s, x);
    PutVarint(&s, 0);
    CodeReader r(s);
    EXPECT_EQ(r.Varint(), UINT64_MAX);
    std::vector<FiemapExtent> back = {{1, 2, 3, 4}};
    r.Extents(&back);
    EXPECT_EQ(r.Varint(), 0u);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r.at_end());
    ASSERT_EQ(back.size(), x.size());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(back[i].logical, x[i].logical) << i;
      EXPECT_EQ(back[i].physical, x[i].physical) << i;
      EXPECT_EQ(back[i].length, x[i].length) << i;
      EXPECT_EQ(back[i].flags, x[i].flags) << i;
    }
  }
}

TEST(ExtentCode, ContiguousExtentsTakeAFewBytesEach) {
  std::vector<FiemapExtent> x;
  for (uint64_t i = 0; i < 100; ++i) x.push_back({i * 4096, (uint64_t(1) << 40) + i * 4096, 4096, 0});
  std::string s;
  PutExtents(&s, x);
  EXPECT_LE(s.size(), 1 + 6 + 100 * 5u);  // the count, the first physical, then 5 bytes each
}

TEST(ExtentCode, ShortOrDamagedInputIsNotOk) {
  std::string s;
  PutExtents(&s, std::vector<FiemapExtent>{{0, 1 << 30, 4096, 1}, {4096, 5 << 30, 8192, 0}});
  for (size_t cut = 0; cut < s.size(); ++cut) {
    CodeReader r(std::string_view(s).substr(0, cut));
    std::vector<FiemapExtent> back;
    r.Extents(&back);
    EXPECT_FALSE(r.ok()) << cut;
    EXPECT_TRUE(back.empty()) << cut;
    EXPECT_EQ(r.Varint(), 0u) << "not ok stays not ok";
  }
  // A count larger than the bytes could hold.
  std::string big;
  PutVarint(&big, 1000);
  big.append(100, '\0');
  CodeReader r(big);
  std::vector<FiemapExtent> back;
  r.Extents(&back);
  EXPECT_FALSE(r.ok());
  // A varint of more than 64 bits, and a number over 32 bits where 32 are wanted.
  const std::string eleven = std::string(11, char(0x80)) + '\1';  // the reader only looks at it
  CodeReader longer(eleven);
  longer.Varint();
  EXPECT_FALSE(longer.ok());
  std::string wide;
  PutVarint(&wide, uint64_t(UINT32_MAX) + 1);
  CodeReader r32(wide);
  EXPECT_EQ(r32.Varint32(), 0u);
  EXPECT_FALSE(r32.ok());
  char raw[4];
  CodeReader few(std::string_view("ab"));
  few.Bytes(raw, sizeof raw);
  EXPECT_FALSE(few.ok());
}

}  // namespace
}  // namespace oans
