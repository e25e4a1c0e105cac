// Fd: an owning descriptor, closed once, moved and never copied.
#include "lib/base/fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <type_traits>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

static_assert(!std::is_copy_constructible_v<Fd> && !std::is_copy_assignable_v<Fd>);
static_assert(std::is_nothrow_move_constructible_v<Fd> && std::is_nothrow_move_assignable_v<Fd>);

// Counts the closes of each descriptor; opens nothing.
class CloseCounter : public test::ForwardingSys {
 public:
  void Close(int fd) override { closes[fd]++; }
  Result<int> OpenNoFollow(const std::string& path) override {
    if (path == "missing") return Status::Io("open missing", ENOENT);
    return 7;
  }
  std::map<int, int> closes;
};

TEST(Fd, ClosesOnceThroughItsSys) {
  CloseCounter sys;
  {
    Fd fd(sys, 5);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), 5);
    fd.reset();
    EXPECT_FALSE(fd.valid());
    fd.reset();  // nothing left to close
  }
  EXPECT_EQ(sys.closes, (std::map<int, int>{{5, 1}}));
  { Fd fd(sys, 6); }
  EXPECT_EQ(sys.closes[6], 1);
  { Fd none; }
  EXPECT_EQ(sys.closes.size(), 2u);
}

TEST(Fd, AMoveHandsTheDescriptorOver) {
  CloseCounter sys;
  {
    Fd a(sys, 5);
    Fd b(std::move(a));
    EXPECT_FALSE(a.valid());  // NOLINT: moved from on purpose
    EXPECT_EQ(b.get(), 5);
    Fd c(sys, 6);
    c = std::move(b);  // 6 is closed now, 5 moves on
    EXPECT_EQ(sys.closes, (std::map<int, int>{{6, 1}}));
    EXPECT_EQ(c.get(), 5);
    Fd& same = c;
    c = std::move(same);  // to itself: kept open
    EXPECT_EQ(c.get(), 5);
    EXPECT_EQ(sys.closes.count(5), 0u);
  }
  EXPECT_EQ(sys.closes, (std::map<int, int>{{5, 1}, {6, 1}}));
}

TEST(Fd, ReleaseGivesItUpUnclosed) {
  CloseCounter sys;
  {
    Fd fd(sys, 5);
    EXPECT_EQ(fd.release(), 5);
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_TRUE(sys.closes.empty());
}

TEST(Fd, OwnTakesAnOpensResult) {
  CloseCounter sys;
  {
    auto fd = Own(sys, sys.OpenNoFollow("here"));
    ASSERT_TRUE(fd.ok());
    EXPECT_EQ(fd->get(), 7);
    auto missing = Own(sys, sys.OpenNoFollow("missing"));
    EXPECT_TRUE(test::StatusIs(missing.status(), Status::Code::kIoError, "open missing"));
  }
  EXPECT_EQ(sys.closes, (std::map<int, int>{{7, 1}}));
}

// Without a Sys, it closes with ::close: the descriptor number is free again after.
TEST(Fd, OneOpenedDirectlyClosesWithClose) {
  const int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    Fd fd(raw);
    EXPECT_NE(::fcntl(raw, F_GETFD), -1);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
}  // namespace oans
