#include "lib/scan/roots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "lib/base/root_path.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

// Makes `path` below `dir` with its parents.
void MakeDirs(const TempDir& dir, const std::string& path) {
  for (size_t at = path.find('/'); at != std::string::npos; at = path.find('/', at + 1))
    if (!test::Exists(dir.Join(path.substr(0, at)))) test::MakeDir(dir.Join(path.substr(0, at)));
  test::MakeDir(dir.Join(path));
}

TEST(CanonicalRoot, MadeAbsoluteAndClean) {
  TempDir dir;
  MakeDirs(dir, "x");
  auto n = CanonicalRoot(dir.Join("x/../x/."));
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, dir.Join("x"));
  n = CanonicalRoot(dir.Join("x") + "/");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, dir.Join("x"));
  EXPECT_EQ(CanonicalRoot("").status().code(), Status::Code::kInvalidArgument);
  n = CanonicalRoot(dir.Join("missing"));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().errnum(), ENOENT);
  EXPECT_TRUE(StatusIs(n.status(), Status::Code::kIoError, dir.Join("missing")));
}

// A root that is a symlink is refused, naming its target, however it is written; a
// symlink in a directory above the root is resolved.
TEST(CanonicalRoot, SymlinkRootRefusedNamingItsTarget) {
  TempDir dir;
  MakeDirs(dir, "data/sub");
  ASSERT_EQ(::symlink("data", dir.Join("link").c_str()), 0);
  for (const std::string& given : {dir.Join("link"), dir.Join("link/"), dir.Join("link/."), dir.Join("link//./")}) {
    auto n = CanonicalRoot(given);
    EXPECT_TRUE(StatusIs(n.status(), Status::Code::kInvalidArgument,
                         given + " is a symlink to " + dir.Join("data") + "; give the target itself"))
        << given;
  }
  ASSERT_EQ(::symlink("nowhere", dir.Join("dangling").c_str()), 0);
  EXPECT_TRUE(StatusIs(CanonicalRoot(dir.Join("dangling")).status(), Status::Code::kInvalidArgument,
                       "is a symlink to nowhere"));
  auto below = CanonicalRoot(dir.Join("link/sub"));
  ASSERT_TRUE(below.ok()) << below.status().message();
  EXPECT_EQ(*below, dir.Join("data/sub"));
}

std::vector<std::string> Roots(const std::vector<std::string>& given, const std::vector<std::string>& excludes,
                               std::vector<std::string>* notices = nullptr) {
  auto r = CanonicalScanRoots(DefaultSys(), given, excludes);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  if (notices) *notices = r->notices;
  return r->roots;
}

// Repeated and nested roots are scanned once, said once each, naming the root covering
// them; roots side by side are all kept, in the order given.
TEST(ScanRoots, RepeatedAndNestedRootsDropped) {
  TempDir dir;
  MakeDirs(dir, "srv/fz/deep");
  MakeDirs(dir, "other");
  test::WriteFile(dir.Join("srv/fz/file"), "x");
  std::vector<std::string> notices;
  EXPECT_EQ(Roots({dir.Join("srv/fz"), dir.Join("srv/fz"), dir.Join("srv/fz/")}, {}, &notices),
            std::vector<std::string>{dir.Join("srv/fz")});
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0], dir.Join("srv/fz") + " is given more than once; scanning it once");
  EXPECT_EQ(notices[1], dir.Join("srv/fz/") + " and " + dir.Join("srv/fz") + " are the same root, " +
                            dir.Join("srv/fz") + "; scanning it once");
  EXPECT_EQ(Roots({dir.Join("srv/fz/deep"), dir.Join("srv"), dir.Join("srv/fz"), dir.Join("srv/fz/file")}, {},
                  &notices),
            std::vector<std::string>{dir.Join("srv")});
  ASSERT_EQ(notices.size(), 3u);
  EXPECT_NE(notices[0].find(dir.Join("srv/fz/deep") + " lies below " + dir.Join("srv")), std::string::npos)
      << notices[0];
  EXPECT_EQ(Roots({dir.Join("other"), dir.Join("srv")}, {}, &notices),
            (std::vector<std::string>{dir.Join("other"), dir.Join("srv")}));
  EXPECT_TRUE(notices.empty());
  // A name that only starts like another root is not below it.
  MakeDirs(dir, "srvx");
  EXPECT_EQ(Roots({dir.Join("srv"), dir.Join("srvx")}, {}).size(), 2u);
}

// A root below an excluded directory, or one itself excluded, is not reached by the
// walk of the root above it: kept.
TEST(ScanRoots, RootBelowAnExcludedDirectoryKept) {
  TempDir dir;
  MakeDirs(dir, "srv/cache/x");
  EXPECT_EQ(Roots({dir.Join("srv"), dir.Join("srv/cache/x")}, {"cache"}).size(), 2u);
  EXPECT_EQ(Roots({dir.Join("srv"), dir.Join("srv/cache/x")}, {"x"}).size(), 2u);
  EXPECT_EQ(Roots({dir.Join("srv"), dir.Join("srv/cache/x")}, {"*.tmp"}).size(), 1u);
}

// A root on another mount than the root above it (the walk does not cross into it)
// is kept.
TEST(ScanRoots, RootAcrossAMountPointKept) {
  TempDir dir;
  MakeDirs(dir, "srv/mnt/x");
  struct Mounted : test::ForwardingSys {
    std::string mount_point;
    Result<FileStat> StatAt(int dirfd, const std::string& name) override {
      auto st = ForwardingSys::StatAt(dirfd, name);
      if (st.ok()) st->mnt_id = name.compare(0, mount_point.size(), mount_point) == 0 ? 2 : 1;
      return st;
    }
  } sys;
  sys.mount_point = dir.Join("srv/mnt");
  auto r = CanonicalScanRoots(sys, {dir.Join("srv"), dir.Join("srv/mnt/x")}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->roots.size(), 2u);
  sys.mount_point = dir.Join("elsewhere");
  r = CanonicalScanRoots(sys, {dir.Join("srv"), dir.Join("srv/mnt/x")}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->roots, std::vector<std::string>{dir.Join("srv")});
}

TEST(ScanRoots, SymlinkRootRefused) {
  TempDir dir;
  MakeDirs(dir, "data");
  ASSERT_EQ(::symlink("data", dir.Join("link").c_str()), 0);
  EXPECT_TRUE(StatusIs(CanonicalScanRoots(DefaultSys(), {dir.Join("data"), dir.Join("link")}, {}).status(),
                       Status::Code::kInvalidArgument, "is a symlink to"));
  EXPECT_TRUE(StatusIs(CanonicalScanRoots(DefaultSys(), {}, {}).status(), Status::Code::kInvalidArgument, "no root"));
}

}  // namespace
}  // namespace oans
