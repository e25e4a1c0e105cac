#include "lib/apply/dir_ahead.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

PlanRound RoundOf(const std::vector<std::string>& paths) {
  PlanRound r;
  for (const auto& p : paths) {
    PlanFileRef f;
    f.path = p;
    r.files.push_back(f);
  }
  return r;
}

TEST(PlanDirectoriesTest, EveryDirectoryAboveEachPathOnce) {
  PlanDirectories d;
  d.Add(RoundOf({"/srv/a/b/f1", "/srv/a/b/f2", "/srv/a/c/f3"}));
  PlanRound r = RoundOf({"/srv/x"});
  r.files[0].other_paths = {"/srv/d/link"};
  d.Add(r);
  EXPECT_EQ(d.Take(), (std::vector<std::string>{"/", "/srv", "/srv/a", "/srv/a/b", "/srv/a/c", "/srv/d"}));
}

TEST(PlanDirectoriesTest, NoneOnceOverTheLimit) {
  PlanDirectories d(3);
  d.Add(RoundOf({"/a/b/c/f"}));  // four directories: "/", /a, /a/b, /a/b/c
  d.Add(RoundOf({"/a/f"}));
  EXPECT_TRUE(d.Take().empty());
}

// Counts the directories opened, in order.
class OpenedSys : public test::ForwardingSys {
 public:
  Result<int> OpenDirNoFollow(const std::string& path) override {
    opened.push_back(path);
    return test::ForwardingSys::OpenDirNoFollow(path);
  }
  std::vector<std::string> opened;
};

TEST(ListDirectoriesAheadTest, OnlyThePlansDirectoriesByInodeGoingUp) {
  test::TempDir dir;
  const std::string r = dir.path();
  // Made in this order, inodes rise with it on most filesystems; the test reads them.
  for (const char* d : {"/z", "/z/in", "/a", "/a/in", "/m", "/skip", "/skip/deep"})
    ASSERT_EQ(::mkdir((r + d).c_str(), 0755), 0);
  std::vector<std::string> dirs = {r, r + "/a", r + "/a/in", r + "/m", r + "/z", r + "/z/in"};
  std::sort(dirs.begin(), dirs.end());
  OpenedSys sys;
  EXPECT_EQ(ListDirectoriesAhead(sys, {r}, dirs, nullptr), 6u);
  ASSERT_EQ(sys.opened.size(), 7u);  // the root opened for its inode, then listed
  EXPECT_EQ(sys.opened[0], r);
  EXPECT_EQ(sys.opened[1], r);
  for (const auto& p : sys.opened) EXPECT_EQ(p.find("/skip"), std::string::npos) << p;
  // After the root, an elevator: each next inode is the next one up, the lowest once
  // none is above.
  struct stat st;
  std::vector<uint64_t> inodes;
  for (size_t i = 2; i < sys.opened.size(); ++i) {
    ASSERT_EQ(::stat(sys.opened[i].c_str(), &st), 0);
    inodes.push_back(st.st_ino);
  }
  size_t wraps = 0;
  for (size_t i = 1; i < inodes.size(); ++i) wraps += inodes[i] < inodes[i - 1];
  EXPECT_LE(wraps, 1u);  // /z/in is found after /z, below /a/in's inode or above: one wrap at most
}

TEST(ListDirectoriesAheadTest, NothingWithoutDirectoriesOrWhenStopped) {
  test::TempDir dir;
  OpenedSys sys;
  EXPECT_EQ(ListDirectoriesAhead(sys, {dir.path()}, {}, nullptr), 0u);
  EXPECT_TRUE(sys.opened.empty());
  EXPECT_EQ(ListDirectoriesAhead(sys, {dir.path()}, {dir.path()}, [] { return true; }), 0u);
  EXPECT_EQ(sys.opened.size(), 1u);  // the root's inode, read before the first stop
}

TEST(ListDirectoriesAheadTest, ASymlinkInPlaceOfADirectoryIsNotFollowed) {
  test::TempDir dir;
  const std::string r = dir.path();
  ASSERT_EQ(::mkdir((r + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((r + "/real/secret").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (r + "/link").c_str()), 0);
  OpenedSys sys;
  std::vector<std::string> dirs = {r, r + "/link", r + "/link/secret"};
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(ListDirectoriesAhead(sys, {r}, dirs, nullptr), 1u);  // the root only
}

}  // namespace
}  // namespace oans
