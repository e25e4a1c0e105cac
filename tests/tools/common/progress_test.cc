// ProgressRenderer: problems of many files for one reason are printed for the first few
// files and then counted, once per file, in one line per reason.
#include "tools/common/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace oans::cli {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ProgressRenderer, FileNoticesCollapseIntoCountsPerReason) {
  testing::internal::CaptureStderr();
  {
    ProgressRenderer r("oans-apply", ProgressMode::kNone, false);
    for (int i = 0; i < 200; ++i) r.FileNotice("/d/f" + std::to_string(i), "dedupe failed, EOPNOTSUPP");
    r.FileNotice("/d/f7", "dedupe failed, EOPNOTSUPP");  // the same file again: counted once
    r.FileNotice("/d/x", "skipped, changed since scan (modified)");
    r.Finish();
    r.Finish();  // the counts are printed once
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(err, "\n"), ProgressRenderer::kShownPerReason + 2) << err;
  EXPECT_EQ(Count(err, ": dedupe failed, EOPNOTSUPP\n"), ProgressRenderer::kShownPerReason + 1) << err;
  EXPECT_NE(err.find("oans-apply: /d/f0: dedupe failed, EOPNOTSUPP\n"), std::string::npos) << err;
  EXPECT_NE(err.find("oans-apply: " + std::to_string(200 - ProgressRenderer::kShownPerReason) +
                     " more files: dedupe failed, EOPNOTSUPP\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("oans-apply: /d/x: skipped, changed since scan (modified)\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("more files: skipped"), std::string::npos) << err;
}

TEST(ProgressRenderer, QuietPrintsNoFileNotices) {
  testing::internal::CaptureStderr();
  {
    ProgressRenderer r("oans-apply", ProgressMode::kNone, true);
    for (int i = 0; i < 10; ++i) r.FileNotice("/d/f" + std::to_string(i), "dedupe failed, EOPNOTSUPP");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(ProgressRenderer, NoticesWrapToTheWidthAtSpaces) {
  const std::string text = "oans-apply: /srv/data/a/very/long/path/of/a/file/in/a/deep/tree/somewhere.bin: "
                           "skipped, EPERM (not permitted: immutable, append-only or not owner)";
  const std::string wrapped = WrapForTerminal(text, 40);
  size_t start = 0, lines = 0;
  std::string joined;
  while (start < wrapped.size()) {
    const size_t end = wrapped.find('\n', start);
    ASSERT_NE(end, std::string::npos) << wrapped;
    EXPECT_LE(end - start, 40u) << wrapped;
    const std::string line = wrapped.substr(start, end - start);
    if (lines) {
      EXPECT_EQ(line.substr(0, 2), "  ") << wrapped;
    }
    joined += lines ? line.substr(2) : line;
    start = end + 1;
    ++lines;
  }
  EXPECT_GE(lines, 4u) << wrapped;
  // Nothing lost: the words come back, the cut path whole.
  EXPECT_NE(joined.find("/srv/data/a/very/long/path/of/a/file/in/a/deep/tree/somewhere.bin:"), std::string::npos)
      << joined;
  EXPECT_EQ(WrapForTerminal("short notice", 80), "short notice\n");
}

}  // namespace
}  // namespace oans::cli
