#include "lib/apply/dir_ahead.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

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
  EXPECT_FALSE(d.over());
  EXPECT_EQ(d.Take(), (std::vector<std::string>{"/", "/srv", "/srv/a", "/srv/a/b", "/srv/a/c", "/srv/d"}));
}

TEST(PlanDirectoriesTest, NoneOnceOverTheLimit) {
  PlanDirectories d(200);  // bytes: three short directories fit, not four
  d.Add(RoundOf({"/a/b/c/f"}));
  d.Add(RoundOf({"/a/f"}));
  EXPECT_TRUE(d.over());
  EXPECT_TRUE(d.Take().empty());
}

TEST(ListAheadRefusalTest, OnlyWhatStaysCached) {
  EXPECT_EQ(ListAheadRefusal(1000, 4096, uint64_t(16) << 20), "");
  EXPECT_NE(ListAheadRefusal(1025, 4096, uint64_t(16) << 20), "");
  EXPECT_NE(ListAheadRefusal(1, 4096, 0), "");
  EXPECT_NE(ListAheadRefusal(UINT64_MAX / 2, 4096, UINT64_MAX), "");  // no overflow
  EXPECT_EQ(ListAheadRefusal(0, 4096, 0), "");
}

// A tree of directories by path: each with its inode and its entries; fake descriptors.
class TreeSys : public test::ForwardingSys {
 public:
  struct Dir {
    uint64_t ino;
    std::vector<DirEntry> entries;
  };
  Result<int> OpenDirNoFollow(const std::string& path) override {
    opened.push_back(path);
    if (!dirs.count(path)) return Status::Io("open " + path, ENOENT);
    open_[next_] = path;
    return next_++;
  }
  Result<FileStat> Fstat(int fd) override {
    FileStat st;
    st.dev = 7;
    st.ino = stat_ino.count(open_[fd]) ? stat_ino[open_[fd]] : dirs[open_[fd]].ino;
    return st;
  }
  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
    ++batches;
    *batch = dirs[open_[fd]].entries;
    return false;
  }
  void Close(int fd) override { open_.erase(fd); }
  void Add(const std::string& path, uint64_t ino) {
    dirs[path].ino = ino;
    const size_t slash = path.rfind('/');
    if (slash > 0 && dirs.count(path.substr(0, slash)))
      dirs[path.substr(0, slash)].entries.push_back({path.substr(slash + 1), ino, DT_DIR});
  }
  std::map<std::string, Dir> dirs;
  std::map<std::string, uint64_t> stat_ino;  // what Fstat says when it differs from the entry
  std::vector<std::string> opened;
  int batches = 0;

 private:
  std::map<int, std::string> open_;
  int next_ = 1000;
};

std::vector<std::string> Listed(const TreeSys& sys) {
  // Every open but the first, which reads the root's inode.
  return std::vector<std::string>(sys.opened.begin() + 1, sys.opened.end());
}

TEST(ListDirectoriesAheadTest, AnElevatorOverThePlansDirectoriesOnly) {
  TreeSys sys;
  sys.Add("/r", 10);
  sys.Add("/r/a", 50);
  sys.Add("/r/b", 20);
  sys.Add("/r/a/x", 30);  // found below the head: taken when it wraps
  sys.Add("/r/a/y", 60);  // found above: taken on the way up
  sys.Add("/r/b/z", 40);
  sys.Add("/r/skip", 15);  // not above any file of the plan
  const std::vector<std::string> dirs = {"/r", "/r/a", "/r/a/x", "/r/a/y", "/r/b", "/r/b/z"};
  EXPECT_EQ(ListDirectoriesAhead(sys, {"/r"}, dirs, nullptr), 6u);
  EXPECT_EQ(Listed(sys), (std::vector<std::string>{"/r", "/r/b", "/r/b/z", "/r/a", "/r/a/y", "/r/a/x"}));
}

TEST(ListDirectoriesAheadTest, APlansDotDotPathsReachNothingOutsideTheRoots) {
  TreeSys sys;
  sys.Add("/r", 10);
  sys.Add("/r/a", 20);
  sys.Add("/etc", 5);
  sys.dirs["/r"].entries.push_back({"..", 1, DT_DIR});
  sys.dirs["/r"].entries.push_back({".", 10, DT_DIR});
  const std::vector<std::string> dirs = {"/etc", "/r", "/r/..", "/r/../etc", "/r/a"};  // sorted, as a crafted plan gives
  EXPECT_EQ(ListDirectoriesAhead(sys, {"/r"}, dirs, nullptr), 2u);
  EXPECT_EQ(Listed(sys), (std::vector<std::string>{"/r", "/r/a"}));
}

TEST(ListDirectoriesAheadTest, ADirectoryReplacedSinceItsParentWasListedIsNot) {
  TreeSys sys;
  sys.Add("/r", 10);
  sys.Add("/r/a", 20);
  sys.Add("/r/a/x", 30);
  sys.stat_ino["/r/a"] = 99;  // another directory there now
  EXPECT_EQ(ListDirectoriesAhead(sys, {"/r"}, {"/r", "/r/a", "/r/a/x"}, nullptr), 1u);
  EXPECT_EQ(Listed(sys), (std::vector<std::string>{"/r", "/r/a"}));  // opened, not listed
}

TEST(ListDirectoriesAheadTest, StopsBetweenDirectoriesAndBatches) {
  TreeSys sys;
  sys.Add("/r", 10);
  sys.Add("/r/a", 20);
  int asked = 0;
  EXPECT_EQ(ListDirectoriesAhead(sys, {"/r"}, {"/r", "/r/a"}, [&asked] { return ++asked > 1; }), 1u);
  EXPECT_EQ(sys.batches, 0);  // stopped before the root's first batch
  EXPECT_EQ(ListDirectoriesAhead(sys, {"/r"}, {}, nullptr), 0u);
}

// Reports the symlink "link" as a directory, as a directory replaced by a symlink after
// getdents would be.
class LinkAsDirSys : public test::ForwardingSys {
 public:
  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
    auto more = test::ForwardingSys::ReadDir(fd, batch);
    for (auto& e : *batch)
      if (e.name == "link") e.type = DT_DIR;
    return more;
  }
  Result<int> OpenDirNoFollow(const std::string& path) override {
    opened.push_back(path);
    return test::ForwardingSys::OpenDirNoFollow(path);
  }
  std::vector<std::string> opened;
};

TEST(ListDirectoriesAheadTest, ASymlinkInPlaceOfADirectoryIsNotFollowed) {
  test::TempDir dir;
  const std::string r = dir.path();
  ASSERT_EQ(::mkdir((r + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((r + "/real/secret").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (r + "/link").c_str()), 0);
  LinkAsDirSys sys;
  std::vector<std::string> dirs = {r, r + "/link", r + "/link/secret"};
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(ListDirectoriesAhead(sys, {r}, dirs, nullptr), 1u);  // the root only
  EXPECT_EQ(sys.opened.size(), 3u);  // the root twice, then the link, refused
  for (const auto& p : sys.opened) EXPECT_EQ(p.find("secret"), std::string::npos) << p;
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

TEST(WantsPlanDirectoriesTest, ASpinningDiskWithPrefetchAndNoDryRun) {
  ApplyOptions o;
  PlanHeader h;
  EXPECT_FALSE(WantsPlanDirectories(o, h));  // the plan records no storage
  h.storage = StorageKind::kHdd;
  EXPECT_TRUE(WantsPlanDirectories(o, h));
  o.dry_run = true;
  EXPECT_FALSE(WantsPlanDirectories(o, h));
  o.dry_run = false;
  o.prefetch = false;
  EXPECT_FALSE(WantsPlanDirectories(o, h));
  o.prefetch = true;
  o.storage = StorageChoice::kSsd;
  EXPECT_FALSE(WantsPlanDirectories(o, h));
  h.storage = StorageKind::kSsd;
  o.storage = StorageChoice::kHdd;
  EXPECT_TRUE(WantsPlanDirectories(o, h));
}

}  // namespace
}  // namespace oans
