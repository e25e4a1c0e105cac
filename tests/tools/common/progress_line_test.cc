#include "tools/common/progress_line.h"

#include <gtest/gtest.h>

#include "tools/common/summary.h"

namespace oans::cli {
namespace {

ProgressSnapshot Snap(const char* phase, uint64_t db, uint64_t tb, uint64_t di, uint64_t ti, bool estimate = false) {
  ProgressSnapshot s;
  s.phase = phase;
  s.done_bytes = db, s.total_bytes = tb, s.done_items = di, s.total_items = ti, s.estimate = estimate;
  return s;
}

TEST(ProgressLineTest, NothingToDoShowsNoZeroFractionNorUnknownEta) {
  for (double elapsed : {0.0, 5.0}) {
    for (const auto& s : {Snap("hash", 0, 0, 0, 0), Snap("hash", 0, 0, 12, 0), Snap("walk", 0, 0, 0, 0, true)}) {
      const std::string line = ProgressLine("oans-scan", s, elapsed);
      EXPECT_EQ(line.find("0 B / 0 B"), std::string::npos) << line;
      EXPECT_EQ(line.find("ETA ?"), std::string::npos) << line;
      EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
      EXPECT_EQ(line.find('%'), std::string::npos) << line;
    }
  }
}

TEST(ProgressLineTest, ItemsOnlyTotalGivesPercentAndEta) {
  // The planner's grouping phase counts groups and no bytes.
  const std::string line = ProgressLine("oans-plan", Snap("group", 0, 0, 25, 100), 10.0);
  EXPECT_EQ(line, "oans-plan group: 25/100 files (25.0%), ETA 30.0s");
}

TEST(ProgressLineTest, ExactTotals) {
  EXPECT_EQ(ProgressLine("oans-apply", Snap("dedupe", 1024, 4096, 1, 4), 1.0),
            "oans-apply dedupe: 1.00 KiB / 4.00 KiB, 1/4 rounds (25.0%), 1.00 KiB/s, ETA 3.0s");
  // No rate yet: no ETA rather than an unknown one.
  EXPECT_EQ(ProgressLine("oans-apply", Snap("dedupe", 1024, 4096, 1, 4), 0.1),
            "oans-apply dedupe: 1.00 KiB / 4.00 KiB, 1/4 rounds (25.0%)");
  // Finished: 100% and nothing left, whatever the rate.
  EXPECT_EQ(ProgressLine("oans-scan", Snap("walk", 4096, 4096, 3, 3), 0.0),
            "oans-scan walk: 4.00 KiB / 4.00 KiB, 3/3 files (100.0%), ETA 0.0s");
}

TEST(ProgressLineTest, EstimateIsMarkedAndStaysBelowHundred) {
  EXPECT_EQ(ProgressLine("oans-scan", Snap("walk", 1024, 4096, 10, 40, true), 2.0),
            "oans-scan walk: 1.00 KiB / ~4.00 KiB, 10/~40 files (~25.0%), 512 B/s, ETA ~6.0s");
  const std::string near = ProgressLine("oans-scan", Snap("walk", 4095, 4096, 10, 40, true), 2.0);
  EXPECT_NE(near.find("(~99.0%)"), std::string::npos) << near;
  // Past the estimate: said so, with no percentage and no ETA.
  const std::string past = ProgressLine("oans-scan", Snap("walk", 8192, 4096, 50, 40, true), 2.0);
  EXPECT_EQ(past, "oans-scan walk: 8.00 KiB, 50 files (more than the estimate of ~4.00 KiB), 4.00 KiB/s");
  EXPECT_LT(ProgressEta(Snap("walk", 8192, 4096, 50, 40, true), 2.0), 0);
}

TEST(ProgressLineTest, KeepsWithinTheWidthDroppingRateThenBytesThenEta) {
  const ProgressSnapshot s = Snap("dedupe", 123ull << 30, 456ull << 30, 1234567, 7654321);
  const std::string full = ProgressLine("oans-apply", s, 100.0);
  EXPECT_EQ(full, "oans-apply dedupe: 123.00 GiB / 456.00 GiB, 1234567/7654321 rounds (27.0%), 1.23 GiB/s, "
                  "ETA 4m30s");
  EXPECT_EQ(ProgressLine("oans-apply", s, 100.0, 200), full);
  EXPECT_EQ(ProgressLine("oans-apply", s, 100.0, 90),
            "oans-apply dedupe: 123.00 GiB / 456.00 GiB, 1234567/7654321 rounds (27.0%), ETA 4m30s");
  EXPECT_EQ(ProgressLine("oans-apply", s, 100.0, 79), "oans-apply dedupe: 1234567/7654321 rounds (27.0%), ETA 4m30s");
  EXPECT_EQ(ProgressLine("oans-apply", s, 100.0, 55), "oans-apply dedupe: 1234567/7654321 rounds (27.0%)");
  EXPECT_EQ(ProgressLine("oans-apply", s, 100.0, 30), "oans-apply dedupe: 1234567/765");
  EXPECT_EQ(ItemsOf("dedupe"), std::string("rounds"));
  EXPECT_EQ(ItemsOf("hash"), std::string("files"));
  EXPECT_EQ(Columns("d\xc3\xa9j\xc3\xa0"), 4u);  // "déjà"
  EXPECT_EQ(FirstColumns("d\xc3\xa9j\xc3\xa0", 2), "d\xc3\xa9");
}

TEST(SummaryTest, WrapsAtEightyColumnsAndLeavesOutEmptyParts) {
  std::vector<std::string> parts;
  for (int i = 0; i < 12; ++i) parts.push_back("part number " + std::to_string(i));
  parts.push_back("");
  const std::string text = WrapSummary("oans-scan: found 1 file in 0.1s", parts);
  size_t start = 0, lines = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end - start, kSummaryWidth) << text;
    start = end + 1;
    ++lines;
  }
  EXPECT_GE(lines, 3u) << text;
  EXPECT_EQ(text.find(",\n  ,"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 15), "part number 11\n") << text;
  EXPECT_EQ(WrapSummary("head", {}), "head\n");
  EXPECT_EQ(WrapSummary("", {"", ""}), "");
  EXPECT_EQ(WrapSummary("", {"skipped 2 symlinks", "", "1 mount points"}), "  skipped 2 symlinks, 1 mount points\n");
}

}  // namespace
}  // namespace oans::cli
