#include "lib/scan/estimate.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

// Reports a fixed usage for every filesystem, and counts the calls.
class UsageSys : public test::ForwardingSys {
 public:
  Result<FsUsage> Usage(int fd) override {
    (void)fd;
    ++calls;
    return FsUsage{1000, 7};
  }
  int calls = 0;
};

TEST(EstimateWalkTest, PreviousIndexTotalsWhenComplete) {
  UsageSys sys;
  WalkEstimate e = EstimateWalk(sys, {"/tmp"}, 42, 4200, true);
  EXPECT_EQ(e.bytes, 4200u);
  EXPECT_EQ(e.files, 42u);
  EXPECT_STREQ(e.source, "previous index");
  EXPECT_EQ(sys.calls, 0);
}

TEST(EstimateWalkTest, UsedSpaceOfEachFilesystemOnce) {
  UsageSys sys;
  // Two roots on one filesystem and an incomplete previous index: statfs, counted once.
  WalkEstimate e = EstimateWalk(sys, {"/tmp", "/tmp/."}, 42, 4200, false);
  EXPECT_EQ(e.bytes, 1000u);
  EXPECT_EQ(e.files, 7u);
  EXPECT_STREQ(e.source, "used space");
  ProgressSnapshot s = WalkProgress(e, 10, 2);
  EXPECT_TRUE(s.estimate);
  EXPECT_EQ(s.total_bytes, 1000u);
  EXPECT_EQ(s.total_items, 7u);
  EXPECT_STREQ(s.phase, "walk");
}

TEST(EstimateWalkTest, NothingKnownIsNoEstimate) {
  test::ForwardingSys sys;  // the default Usage knows nothing
  WalkEstimate e = EstimateWalk(sys, {"/tmp", "/nonexistent-root"}, 0, 0, true);
  EXPECT_EQ(e.bytes, 0u);
  EXPECT_STREQ(e.source, "none");
  EXPECT_FALSE(WalkProgress(e, 10, 2).estimate);
}

TEST(EstimateWalkTest, RealStatfsSeesUsedSpace) {
  WalkEstimate e = EstimateWalk(DefaultSys(), {"/"}, 0, 0, false);
  EXPECT_GT(e.bytes, 0u);
}

}  // namespace
}  // namespace oans
