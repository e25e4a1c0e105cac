#include "lib/base/units.h"

#include <gtest/gtest.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

uint64_t SizeOf(const std::string& text) {
  auto r = ParseSize(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : ~uint64_t(0);
}

TEST(Units, ParseSizePlainBytes) {
  EXPECT_EQ(SizeOf("0"), 0u);
  EXPECT_EQ(SizeOf("4096"), 4096u);
  EXPECT_EQ(SizeOf("4096B"), 4096u);
  EXPECT_EQ(SizeOf("123456789012"), 123456789012u);
}

TEST(Units, ParseSizeSuffixes) {
  EXPECT_EQ(SizeOf("4K"), 4096u);
  EXPECT_EQ(SizeOf("4k"), 4096u);
  EXPECT_EQ(SizeOf("4KB"), 4096u);
  EXPECT_EQ(SizeOf("4kb"), 4096u);
  EXPECT_EQ(SizeOf("4KiB"), 4096u);
  EXPECT_EQ(SizeOf("4kib"), 4096u);
  EXPECT_EQ(SizeOf("128M"), 128u << 20);
  EXPECT_EQ(SizeOf("128MiB"), 128u << 20);
  EXPECT_EQ(SizeOf("1G"), 1u << 30);
  EXPECT_EQ(SizeOf("1.5G"), 3ull << 29);
  EXPECT_EQ(SizeOf("0.5K"), 512u);
  EXPECT_EQ(SizeOf("2T"), 2ull << 40);
  EXPECT_EQ(SizeOf("1P"), 1ull << 50);
  EXPECT_EQ(SizeOf("16383P"), 16383ull << 50);
}

TEST(Units, ParseSizeRejectsMalformed) {
  for (const char* bad : {"", "M", "K4", "10 M", " 10M", "10M ", "10MB!", "-1", "+1", "1.5", "100X", "1..5G", "1.2.3",
                          ".", "1e3", "0x10", "nan", "inf", "4BB", "4BiB", "4iB", "4KBB", "4KiBi", "10MM"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    }
  }
}

TEST(Units, ParseSizeRejectsOverflow) {
  EXPECT_FALSE(ParseSize("16384P").ok());
  EXPECT_FALSE(ParseSize("99999999999999999999").ok());
  EXPECT_FALSE(ParseSize("17179869184G").ok());
}

TEST(Units, ParseSizeErrorNamesAcceptedForms) {
  for (const char* bad : {"", "M", "10 M", "100X", "-1"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    const std::string& m = r.status().message();
    EXPECT_NE(m.find("4K"), std::string::npos) << m;
    EXPECT_NE(m.find("128M"), std::string::npos) << m;
    EXPECT_NE(m.find("1G"), std::string::npos) << m;
    // The input is quoted so that "" and " M" are visible.
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
  }
  auto r = ParseSize("1.5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("whole"), std::string::npos) << r.status().message();
}

TEST(Units, ParseDurationSeconds) {
  auto d = [](const std::string& t) {
    auto r = ParseDurationSeconds(t);
    EXPECT_TRUE(r.ok()) << t << ": " << r.status().message();
    return r.ok() ? *r : ~uint64_t(0);
  };
  EXPECT_EQ(d("45"), 45u);
  EXPECT_EQ(d("90s"), 90u);
  EXPECT_EQ(d("30m"), 1800u);
  EXPECT_EQ(d("2h"), 7200u);
  EXPECT_EQ(d("1.5h"), 5400u);
  EXPECT_EQ(d("1d"), 86400u);
  EXPECT_EQ(d("0.5s"), 1u);  // rounded, not truncated to 0
}

TEST(Units, ParseDurationRejectsMalformed) {
  for (const char* bad : {"", "s", "10 s", "5x", "-5s", "5ms", "1.2.3h", "5min", "h5"}) {
    auto r = ParseDurationSeconds(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("90s"), std::string::npos) << r.status().message();
    }
  }
}

TEST(Units, FormatSize) {
  EXPECT_EQ(FormatSize(0), "0 B");
  EXPECT_EQ(FormatSize(1023), "1023 B");
  EXPECT_EQ(FormatSize(1024), "1.00 KiB");
  EXPECT_EQ(FormatSize(1536), "1.50 KiB");
  EXPECT_EQ(FormatSize(128u << 20), "128.00 MiB");
  EXPECT_EQ(FormatSize((1ull << 30) + (1ull << 29)), "1.50 GiB");
  EXPECT_EQ(FormatSize(3ull << 40), "3.00 TiB");
  EXPECT_EQ(FormatSize(~uint64_t(0)), "16384.00 PiB");
}

TEST(Units, FormatDuration) {
  EXPECT_EQ(FormatDuration(12.34), "12.3s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
  EXPECT_EQ(FormatDuration(-1), "?");
}

}  // namespace
}  // namespace oans
