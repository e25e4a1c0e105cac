#include "lib/scan/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <climits>
#include <mutex>
#include <set>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

std::set<std::string> Paths(const WalkResult& r) {
  std::set<std::string> s;
  for (const auto& f : r.files) s.insert(f.path);
  EXPECT_EQ(s.size(), r.files.size()) << "a file was reported twice";
  return s;
}

// root/
//   a/f1 (100 B)   a/b/f2 (200 B)   a/b/c/f3 (300 B)
//   empty (0 B)    small (10 B)
//   link_file -> a/f1   link_dir -> a   dangling -> nowhere
//   fifo
class WalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::MakeDir(dir_.Join("a"));
    test::MakeDir(dir_.Join("a/b"));
    test::MakeDir(dir_.Join("a/b/c"));
    test::WriteFile(dir_.Join("a/f1"), std::string(100, '1'));
    test::WriteFile(dir_.Join("a/b/f2"), std::string(200, '2'));
    test::WriteFile(dir_.Join("a/b/c/f3"), std::string(300, '3'));
    test::WriteFile(dir_.Join("empty"), "");
    test::WriteFile(dir_.Join("small"), "0123456789");
    ASSERT_EQ(::symlink("a/f1", dir_.Join("link_file").c_str()), 0);
    ASSERT_EQ(::symlink("a", dir_.Join("link_dir").c_str()), 0);
    ASSERT_EQ(::symlink("nowhere", dir_.Join("dangling").c_str()), 0);
    ASSERT_EQ(::mkfifo(dir_.Join("fifo").c_str(), 0644), 0);
  }
  std::string P(const std::string& rel) const { return dir_.Join(rel); }
  TempDir dir_;
};

TEST_F(WalkTest, FindsRegularFilesOnly) {
  WalkOptions o;
  auto r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/f1"), P("a/b/f2"), P("a/b/c/f3"), P("small")}));
  EXPECT_EQ(r->skipped_symlinks, 3u);
  EXPECT_EQ(r->skipped_special, 1u);
  EXPECT_EQ(r->skipped_small, 1u);  // the empty file
  EXPECT_EQ(r->dirs, 4u);           // root, a, a/b, a/b/c
  EXPECT_EQ(r->excluded, 0u);
  EXPECT_TRUE(r->problems.empty());
  for (const auto& f : r->files) {
    FileStat st = test::StatPath(f.path);
    EXPECT_EQ(f.st.ino, st.ino) << f.path;
    EXPECT_EQ(f.st.size, st.size) << f.path;
    EXPECT_EQ(f.st.dev, st.dev) << f.path;
    EXPECT_EQ(f.st.mtime_ns, st.mtime_ns) << f.path;
    EXPECT_TRUE(S_ISREG(f.st.mode));
    EXPECT_EQ(f.root, 0u);
  }
}

TEST_F(WalkTest, ProgressCounter) {
  std::atomic<uint64_t> found{0};
  WalkOptions o;
  o.files_found = &found;
  auto r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(found.load(), r->files.size());
}

TEST_F(WalkTest, ExcludeByNameAndByPath) {
  test::WriteFile(P("a/junk.tmp"), "xxxxxxxxxxxx");
  test::MakeDir(P("cache"));
  test::WriteFile(P("cache/big"), std::string(1000, 'c'));
  WalkOptions o;
  o.excludes = {"*.tmp", "cache", dir_.path() + "/a/b/*"};
  auto r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/f1"), P("small")}));
  // junk.tmp, the cache directory (not entered), a/b/f2 and a/b/c.
  EXPECT_EQ(r->excluded, 4u);
  EXPECT_EQ(r->dirs, 3u);  // root, a, a/b
}

TEST(Walk, PathExcluded) {
  EXPECT_TRUE(PathExcluded({"*.o"}, "/src/x.o", "x.o"));
  EXPECT_FALSE(PathExcluded({"*.o"}, "/src/x.oo", "x.oo"));
  // A glob without '/' matches the name only, not a directory on the way.
  EXPECT_FALSE(PathExcluded({"src"}, "/src/x", "x"));
  EXPECT_TRUE(PathExcluded({"src"}, "/src", "src"));
  // A glob with '/' matches the whole path.
  EXPECT_TRUE(PathExcluded({"/data/*/tmp"}, "/data/a/tmp", "tmp"));
  EXPECT_FALSE(PathExcluded({"/data/*/tmp"}, "/other/a/tmp", "tmp"));
  EXPECT_FALSE(PathExcluded({"*/tmp"}, "tmp", "tmp"));
  EXPECT_TRUE(PathExcluded({"nope", "*.iso"}, "/a/b.iso", "b.iso"));
  EXPECT_FALSE(PathExcluded({}, "/a", "a"));
}

TEST(Walk, RelativeExcludesAreBelowEachRoot) {
  const std::vector<std::string> globs = {"photos/@eaDir", "*.tmp", "/abs/x", "*/cache"};
  EXPECT_EQ(ExcludesForRoot(globs, "/srv/data"),
            (std::vector<std::string>{"/srv/data/photos/@eaDir", "*.tmp", "/abs/x", "*/cache"}));
  EXPECT_EQ(ExcludesForRoot({"a/b"}, "/"), std::vector<std::string>{"/a/b"});
  // A root's own glob characters match only themselves.
  const auto odd = ExcludesForRoot({"a/b"}, "/srv/[x]*");
  EXPECT_TRUE(PathExcluded(odd, "/srv/[x]*/a/b", "b"));
  EXPECT_FALSE(PathExcluded(odd, "/srv/x-y/a/b", "b"));
  EXPECT_EQ(ExcludedBy({"nope", "*.iso", "*.iso"}, "/a/b.iso", "b.iso"), 1);
  EXPECT_EQ(ExcludedBy({"nope"}, "/a/b.iso", "b.iso"), -1);
  EXPECT_TRUE(ExcludePreset("nas").ok());
  EXPECT_FALSE(ExcludePreset("synology").ok());
}

TEST_F(WalkTest, MinSize) {
  WalkOptions o;
  o.min_size = 150;
  auto r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/b/f2"), P("a/b/c/f3")}));
  EXPECT_EQ(r->skipped_small, 3u);  // empty, small, f1
  o.min_size = 200;                  // the boundary is inclusive
  r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/b/f2"), P("a/b/c/f3")}));
}

TEST_F(WalkTest, HardlinksBothReported) {
  ASSERT_EQ(::link(P("a/f1").c_str(), P("hl").c_str()), 0);
  auto r = Walk(DefaultSys(), {dir_.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok());
  auto paths = Paths(*r);
  ASSERT_TRUE(paths.count(P("hl")));
  ASSERT_TRUE(paths.count(P("a/f1")));
  uint64_t ino_a = 0, ino_b = 0;
  for (const auto& f : r->files) {
    if (f.path == P("hl")) ino_b = f.st.ino;
    if (f.path == P("a/f1")) ino_a = f.st.ino;
  }
  EXPECT_EQ(ino_a, ino_b);
  EXPECT_EQ(r->files.size(), 5u);
}

TEST_F(WalkTest, SeveralRootsAndAFileRoot) {
  auto r = Walk(DefaultSys(), {P("a/b"), P("small")}, WalkOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/b/f2"), P("a/b/c/f3"), P("small")}));
  for (const auto& f : r->files) EXPECT_EQ(f.root, f.path == P("small") ? 1u : 0u) << f.path;
}

TEST_F(WalkTest, MissingRoot) {
  // One root missing: a problem, not a failure.
  auto r = Walk(DefaultSys(), {dir_.path(), P("missing")}, WalkOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("missing"));
  EXPECT_EQ(r->problems[0].status.errnum(), ENOENT);
  EXPECT_EQ(r->files.size(), 4u);
  // Every root missing: a failure.
  r = Walk(DefaultSys(), {P("missing"), P("gone")}, WalkOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().errnum(), ENOENT);
  // A root that is neither a directory nor a regular file.
  r = Walk(DefaultSys(), {P("fifo"), dir_.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("fifo"));
}

// Fails to open one directory by name, as an unreadable one would.
class DenyDirSys : public test::ForwardingSys {
 public:
  explicit DenyDirSys(std::string name) : name_(std::move(name)) {}
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    if (directory && name == name_) {
      denied_++;
      return Status::Io("open " + name, EACCES);
    }
    return ForwardingSys::OpenAt(dirfd, name, directory);
  }
  std::atomic<int> denied_{0};

 private:
  std::string name_;
};

TEST_F(WalkTest, UnreadableDirectoryIsAProblemAndWalkContinues) {
  test::MakeDir(P("secret"));
  test::WriteFile(P("secret/hidden"), "hidden data");
  test::MakeDir(P("z"));
  test::WriteFile(P("z/after"), "after data");
  DenyDirSys sys("secret");
  auto r = Walk(sys, {dir_.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(sys.denied_.load(), 1);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("secret"));
  EXPECT_EQ(r->problems[0].status.errnum(), EACCES);
  auto paths = Paths(*r);
  EXPECT_FALSE(paths.count(P("secret/hidden")));
  EXPECT_TRUE(paths.count(P("z/after")));
  EXPECT_TRUE(paths.count(P("a/b/c/f3")));
}

TEST_F(WalkTest, UnreadableDirectoryForReal) {
  if (::geteuid() == 0) GTEST_SKIP() << "root bypasses permission checks (covered with DenyDirSys)";
  test::MakeDir(P("secret"));
  test::WriteFile(P("secret/hidden"), "hidden data");
  ASSERT_EQ(::chmod(P("secret").c_str(), 0), 0);
  auto r = Walk(DefaultSys(), {dir_.path()}, WalkOptions{});
  ::chmod(P("secret").c_str(), 0755);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("secret"));
  EXPECT_EQ(r->problems[0].status.errnum(), EACCES);
  EXPECT_EQ(r->files.size(), 4u);
}

// StatAt fails for chosen names: ENOENT (vanished after readdir) or EIO.
class StatFailSys : public test::ForwardingSys {
 public:
  Result<FileStat> StatAt(int dirfd, const std::string& name) override {
    if (name == "f1") return Status::Io("stat " + name, ENOENT);
    if (name == "f2") return Status::Io("stat " + name, EIO);
    return ForwardingSys::StatAt(dirfd, name);
  }
};

TEST_F(WalkTest, VanishedFileIgnoredStatErrorReported) {
  StatFailSys sys;
  auto r = Walk(sys, {dir_.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/b/c/f3"), P("small")}));
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("a/b/f2"));
  EXPECT_EQ(r->problems[0].status.errnum(), EIO);
}

// Reports a different mount id for one directory, as a mount point has.
class MountSys : public test::ForwardingSys {
 public:
  Result<FileStat> StatAt(int dirfd, const std::string& name) override {
    auto st = ForwardingSys::StatAt(dirfd, name);
    if (st.ok() && st->mnt_id == 0) st->mnt_id = 1;  // kernels without STATX_MNT_ID
    if (st.ok() && name == "b") st->mnt_id += 1000;
    return st;
  }
};

TEST_F(WalkTest, StaysOnOneFilesystem) {
  MountSys sys;
  WalkOptions o;
  auto r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->skipped_mounts, 1u);
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/f1"), P("small")}));
  o.one_filesystem = false;
  r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->skipped_mounts, 0u);
  EXPECT_EQ(r->files.size(), 4u);
}

// A Sys that says its filesystem is XFS (whose entries give directories' own inodes, so
// the inode-order walk stats subdirectories only when it comes to them) and counts the
// stats of directory entries made through their parent.
class XfsSys : public test::ForwardingSys {
 public:
  Result<FsIdentity> Identify(int fd) override {
    auto id = ForwardingSys::Identify(fd);
    if (id.ok()) id->type = fs_type;
    return id;
  }
  // A directory stat'ed while its parent is being listed (the walker, one thread, opens
  // a directory by its path only between two listings).
  Result<FileStat> StatAt(int dirfd, const std::string& name) override {
    auto st = ForwardingSys::StatAt(dirfd, name);
    if (st.ok() && S_ISDIR(st->mode) && dirfd != AT_FDCWD && listing) dirs_stated_by_parent++;
    return st;
  }
  Result<int> OpenDirNoFollow(const std::string& path) override {
    listing = false;
    return ForwardingSys::OpenDirNoFollow(path);
  }
  std::string fs_type = "xfs";
  int dirs_stated_by_parent = 0;
  bool listing = false;  // set by the walk's on_dir
};

// XfsSys where the directory of inode `mount` is the root of another mount.
class OneMountSys : public XfsSys {
 public:
  Result<FileStat> StatAt(int dirfd, const std::string& name) override { return Mark(XfsSys::StatAt(dirfd, name)); }
  Result<FileStat> Fstat(int fd) override { return Mark(XfsSys::Fstat(fd)); }
  Result<FileStat> Mark(Result<FileStat> st) {
    if (!st.ok()) return st;
    if (st->mnt_id == 0) st->mnt_id = 1;  // kernels without STATX_MNT_ID
    if (st->ino == mount) st->mnt_id += 1000;
    return st;
  }
  uint64_t mount = 0;
};

// In inode order on XFS a subdirectory is stat'ed when the walk comes to it, by its path:
// a mount point found then is skipped as one, or walked when allowed.
TEST_F(WalkTest, InodeOrderStaysOnOneFilesystem) {
  OneMountSys sys;
  sys.mount = test::StatPath(P("a/b")).ino;
  WalkOptions o;
  o.inode_order = true;
  o.on_dir = [&sys](int, const std::string&, uint32_t) { sys.listing = true; };
  auto r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty()) << r->problems[0].status.message();
  EXPECT_EQ(r->skipped_mounts, 1u);
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("a/f1"), P("small")}));
  EXPECT_EQ(sys.dirs_stated_by_parent, 0);
  o.one_filesystem = false;
  r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty()) << r->problems[0].status.message();
  EXPECT_EQ(r->skipped_mounts, 0u);
  EXPECT_EQ(r->files.size(), 4u);
}

// A Sys whose reading of a directory in disk order answers `answer` for directory `dir`
// (by inode), as if read, moving its position when told to, and counts the calls.
class DiskOrderSys : public test::ForwardingSys {
 public:
  Result<FsIdentity> Identify(int fd) override {
    auto id = ForwardingSys::Identify(fd);
    if (id.ok()) id->type = fs_type;
    return id;
  }
  Result<uint32_t> ReadDirectoryInDiskOrder(int fd) override {
    calls++;
    auto st = Fstat(fd);
    if (!st.ok() || st->ino != dir) return 0u;
    if (move) ::lseek(fd, 0, SEEK_END);
    if (!answer.ok()) return answer;
    return 3u;
  }
  uint64_t dir = 0;
  Status answer = Status::Ok();
  bool move = false;
  int calls = 0;
  std::string fs_type = "xfs";
};

// In inode order with dirs_in_disk_order, each directory is read in disk order before
// its listing: counted where it was; listed as it is where the filesystem cannot; and
// not listed, but reported, where its position was lost.
TEST_F(WalkTest, InodeOrderReadsDirectoriesInDiskOrderFirst) {
  DiskOrderSys sys;
  sys.dir = test::StatPath(P("a")).ino;
  WalkOptions o;
  o.inode_order = true;
  o.dirs_in_disk_order = true;
  auto r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty());
  EXPECT_EQ(r->dirs_in_disk_order, 1u);
  EXPECT_EQ(sys.calls, int(r->dirs));
  EXPECT_EQ(r->files.size(), 4u);
  sys.answer = Status::Unsupported("reading a directory in disk order");
  r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty());
  EXPECT_EQ(r->dirs_in_disk_order, 0u);
  EXPECT_EQ(r->files.size(), 4u);
  sys.answer = Status::Io("seeking back to the start of the directory", EIO);
  sys.move = true;
  r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, P("a"));
  EXPECT_EQ(Paths(*r), (std::set<std::string>{P("small")}));  // a and what is below it not listed
  // Without the option, or off XFS, nothing is asked.
  for (bool option : {false, true}) {
    sys.calls = 0;
    o.dirs_in_disk_order = option;
    sys.fs_type = option ? "ext4" : "xfs";
    r = Walk(sys, {dir_.path()}, o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(sys.calls, 0);
    EXPECT_EQ(r->files.size(), 4u);
  }
}

// A queued directory whose parent is swapped for a symlink to a place where the name is
// a mount point: the symlink is not followed to take the directory for a mount and skip
// it in silence; the walk reports it.
TEST(Walk, InodeOrderTakesNoMountThroughASymlinkedParent) {
  TempDir dir, outside;
  test::MakeDir(dir.Join("u"));
  test::MakeDir(dir.Join("u/d"));
  test::MakeDir(dir.Join("v"));
  test::MakeDir(outside.Join("d"));
  OneMountSys sys;
  sys.mount = test::StatPath(outside.Join("d")).ino;
  WalkOptions o;
  o.inode_order = true;
  bool swapped = false;
  o.on_dir = [&](int, const std::string& path, uint32_t) {
    if (swapped || path == dir.path() || path == dir.Join("u/d")) return;
    swapped = true;  // u/d queued (u listed, or u itself not yet: then u is gone)
    ASSERT_EQ(::rename(dir.Join("u").c_str(), dir.Join("u.moved").c_str()), 0);
    ASSERT_EQ(::symlink(outside.path().c_str(), dir.Join("u").c_str()), 0);
  };
  auto r = Walk(sys, {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->skipped_mounts, 0u);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path.rfind(dir.Join("u"), 0), 0u) << r->problems[0].path;
}

// Below a mount the walk crossed (one_filesystem off), a directory swapped for another
// of that mount before it is listed is refused as replaced: the crossed mount's
// directories carry its mount id, not the one above it, so the swap is not taken for
// another mount crossing (inodes outside `m` are on mount 1, those in it on 1001).
TEST(Walk, InodeOrderRefusesADirectorySwappedBelowACrossedMount) {
  TempDir dir;
  test::MakeDir(dir.Join("m"));
  test::MakeDir(dir.Join("m/b"));
  test::WriteFile(dir.Join("m/b/f"), "data");
  class Mounts : public XfsSys {
   public:
    Result<FileStat> StatAt(int dirfd, const std::string& name) override { return Mark(XfsSys::StatAt(dirfd, name)); }
    Result<FileStat> Fstat(int fd) override { return Mark(XfsSys::Fstat(fd)); }
    Result<FileStat> Mark(Result<FileStat> st) {
      if (st.ok()) st->mnt_id = outside.count(st->ino) ? 1 : 1001;
      return st;
    }
    // m listed, m/b queued: the swap, as the walk comes back to m/b.
    Result<int> OpenDirNoFollow(const std::string& path) override {
      if (path == swap_in && !swapped) {
        swapped = true;
        EXPECT_EQ(::rename((path + "/b").c_str(), (path + "/moved").c_str()), 0);
        test::MakeDir(path + "/b");
        test::WriteFile(path + "/b/planted", "data");
      }
      return XfsSys::OpenDirNoFollow(path);
    }
    std::set<uint64_t> outside;
    std::string swap_in;
    bool swapped = false;
  } sys;
  sys.outside = {test::StatPath(dir.path()).ino};
  sys.swap_in = dir.Join("m");
  WalkOptions o;
  o.inode_order = true;
  o.one_filesystem = false;
  auto r = Walk(sys, {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  for (const auto& f : r->files) EXPECT_EQ(f.path.find("planted"), std::string::npos) << f.path;
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, dir.Join("m/b"));
  EXPECT_EQ(r->problems[0].status.errnum(), ESTALE) << r->problems[0].status.message();
}

// Where an entry's inode need not be the directory's own (an overlay, FUSE, vfat), every
// subdirectory is stat'ed through its parent as it is found, and walked.
TEST_F(WalkTest, InodeOrderStatsSubdirectoriesElsewhere) {
  class Overlay : public XfsSys {
   public:
    Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
      auto more = XfsSys::ReadDir(fd, batch);
      for (auto& e : *batch)
        if (e.type == DT_DIR) e.ino += 1000000;
      return more;
    }
  } sys;
  sys.fs_type = "0x794c7630";
  WalkOptions o;
  o.inode_order = true;
  o.on_dir = [&sys](int, const std::string&, uint32_t) { sys.listing = true; };
  auto r = Walk(sys, {dir_.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty()) << r->problems[0].status.message();
  EXPECT_EQ(r->files.size(), 4u);
  EXPECT_EQ(sys.dirs_stated_by_parent, 3);
}

TEST(Walk, PathLongerThanPathMax) {
  TempDir dir;
  const std::string name(200, 'd');
  int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::string path = dir.path();
  const int depth = PATH_MAX / 200 + 5;
  for (int i = 0; i < depth; ++i) {
    ASSERT_EQ(::mkdirat(fd, name.c_str(), 0755), 0);
    int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(sub, 0);
    ::close(fd);
    fd = sub;
    path += "/" + name;
  }
  int f = ::openat(fd, "deep", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(f, 0);
  ASSERT_EQ(::write(f, "deep data", 9), 9);
  ::close(f);
  ::close(fd);
  path += "/deep";
  ASSERT_GT(path.size(), size_t(PATH_MAX));

  auto r = Walk(DefaultSys(), {dir.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->problems.empty()) << r->problems[0].path.size() << ": " << r->problems[0].status.message();
  ASSERT_EQ(r->files.size(), 1u);
  EXPECT_EQ(r->files[0].path, path);
  EXPECT_EQ(r->files[0].st.size, 9u);
  EXPECT_EQ(r->dirs, uint64_t(depth) + 1);

  // And the file can be opened by that path.
  auto opened = DefaultSys().OpenNoFollow(path);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  char buf[16];
  auto n = DefaultSys().Pread(*opened, buf, sizeof buf, 0);
  DefaultSys().Close(*opened);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), "deep data");
}

TEST(Walk, ManyDirectoriesInParallel) {
  TempDir dir;
  std::set<std::string> want;
  for (int d = 0; d < 40; ++d) {
    std::string sub = dir.Join("d" + std::to_string(d));
    test::MakeDir(sub);
    test::MakeDir(sub + "/inner");
    for (int f = 0; f < 10; ++f) {
      std::string p = sub + (f % 2 ? "/inner" : "") + "/f" + std::to_string(f);
      test::WriteFile(p, "x");
      want.insert(p);
    }
  }
  WalkOptions o;
  o.threads = 8;
  auto r = Walk(DefaultSys(), {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Paths(*r), want);
  EXPECT_EQ(r->dirs, 81u);
}

TEST(Walk, SymlinkInRootPathIsNotFollowedBelowIt) {
  TempDir dir;
  test::MakeDir(dir.Join("real"));
  test::WriteFile(dir.Join("real/f"), "data");
  ASSERT_EQ(::symlink("real", dir.Join("via").c_str()), 0);
  // The root itself is stat'ed without following: a symlink root is not walked.
  auto r = Walk(DefaultSys(), {dir.Join("via")}, WalkOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos) << r.status().message();
}

// The inode-order walk finds what the parallel walk finds, lists directories by inode and
// stats each batch's entries by inode.
TEST_F(WalkTest, InodeOrderFindsTheSameFiles) {
  WalkOptions parallel;
  auto want = Walk(DefaultSys(), {dir_.path()}, parallel);
  ASSERT_TRUE(want.ok());
  WalkOptions o;
  o.inode_order = true;
  std::vector<uint64_t> dirs;
  o.on_dir = [&dirs](int fd, const std::string&, uint32_t) { dirs.push_back(DefaultSys().Fstat(fd)->ino); };
  auto r = Walk(DefaultSys(), {dir_.path()}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), Paths(*want));
  EXPECT_EQ(r->dirs, want->dirs);
  EXPECT_EQ(r->skipped_symlinks, want->skipped_symlinks);
  EXPECT_EQ(r->skipped_special, want->skipped_special);
  EXPECT_TRUE(r->problems.empty());
  EXPECT_EQ(dirs.size(), 4u);
}

TEST(Walk, InodeOrderVisitsEachBatchByInode) {
  TempDir dir;
  // Names in the reverse of their inodes' order.
  for (int i = 0; i < 50; ++i) test::WriteFile(dir.Join("f" + std::to_string(99 - i)), "x");
  class Recording : public test::ForwardingSys {
   public:
    Result<FileStat> StatAt(int dirfd, const std::string& name) override {
      auto st = ForwardingSys::StatAt(dirfd, name);
      if (st.ok() && dirfd != AT_FDCWD) inodes.push_back(st->ino);  // not the root's
      return st;
    }
    std::vector<uint64_t> inodes;
  } sys;
  WalkOptions o;
  o.inode_order = true;
  auto r = Walk(sys, {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->files.size(), 50u);
  ASSERT_EQ(sys.inodes.size(), 50u);  // one getdents batch: in inode order throughout
  EXPECT_TRUE(std::is_sorted(sys.inodes.begin(), sys.inodes.end()));
}

// Directories are listed as an elevator goes: up from the last one listed, then from the
// lowest. A child found below its parent waits for the next pass instead of pulling the
// walk back down (inodes renumbered: root 1, a 10, b 30, a/c 5).
TEST(Walk, InodeOrderGoesUpBeforeGoingBack) {
  TempDir dir;
  for (const char* d : {"a", "b", "a/c"}) test::MakeDir(dir.Join(d));
  class Renumbered : public test::ForwardingSys {
   public:
    Result<FileStat> StatAt(int dirfd, const std::string& name) override {
      return Renumber(ForwardingSys::StatAt(dirfd, name));
    }
    Result<FileStat> Fstat(int fd) override { return Renumber(ForwardingSys::Fstat(fd)); }
    Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
      auto more = ForwardingSys::ReadDir(fd, batch);
      for (auto& e : *batch)
        if (fake.count(e.ino)) e.ino = fake[e.ino];
      return more;
    }
    Result<FileStat> Renumber(Result<FileStat> st) {
      if (st.ok() && fake.count(st->ino)) st->ino = fake[st->ino];
      return st;
    }
    std::map<uint64_t, uint64_t> fake;
  } sys;
  sys.fake = {{test::StatPath(dir.path()).ino, 1},
              {test::StatPath(dir.Join("a")).ino, 10},
              {test::StatPath(dir.Join("b")).ino, 30},
              {test::StatPath(dir.Join("a/c")).ino, 5}};
  WalkOptions o;
  o.inode_order = true;
  std::vector<std::string> listed;
  o.on_dir = [&](int, const std::string& path, uint32_t) { listed.push_back(path); };
  auto r = Walk(sys, {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(listed, (std::vector<std::string>{dir.path(), dir.Join("a"), dir.Join("b"), dir.Join("a/c")}));
}

// The first directory the inode-order walk lists below `root`, and `act` called there
// once with the name of the other of the two ("a" and "b") it has queued.
std::function<void(int, const std::string&, uint32_t)> AtFirstOf(const TempDir& root,
                                                                 std::function<void(const std::string&)> act) {
  auto done = std::make_shared<bool>(false);
  return [&root, act, done](int, const std::string& path, uint32_t) {
    if (path == root.path() || *done) return;
    *done = true;
    act(path == root.Join("a") ? "b" : "a");
  };
}

// A directory found and queued, then removed (or moved away with what is above it) before
// the walker lists it: reported, not passed over in silence.
TEST(Walk, InodeOrderReportsARemovedDirectory) {
  TempDir dir;
  test::MakeDir(dir.Join("a"));
  test::MakeDir(dir.Join("b"));
  WalkOptions o;
  o.inode_order = true;
  std::string other;
  o.on_dir = AtFirstOf(dir, [&](const std::string& name) {
    other = name;
    ASSERT_EQ(::rmdir(dir.Join(name).c_str()), 0);
  });
  XfsSys sys;
  auto r = Walk(sys, {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, dir.Join(other));
  EXPECT_EQ(r->problems[0].status.errnum(), ENOENT) << r->problems[0].status.message();
}

// A directory found and queued, then swapped for a symlink to a directory outside the
// roots before the walker lists it: refused, not followed (stat'ed through its parent
// when found, or by its path when come to).
TEST(Walk, InodeOrderRefusesADirectorySwappedForASymlink) {
  for (const char* fs : {"xfs", "tmpfs"}) {
    TempDir dir, outside;
    test::WriteFile(outside.Join("secret"), "secret");
    test::MakeDir(dir.Join("a"));
    test::MakeDir(dir.Join("b"));
    test::WriteFile(dir.Join("b/f"), "data");
    test::WriteFile(dir.Join("a/f"), "data");
    WalkOptions o;
    o.inode_order = true;
    std::string other;
    o.on_dir = AtFirstOf(dir, [&](const std::string& name) {
      other = name;
      ASSERT_EQ(::rename(dir.Join(name).c_str(), dir.Join("moved").c_str()), 0);
      ASSERT_EQ(::symlink(outside.path().c_str(), dir.Join(name).c_str()), 0);
    });
    XfsSys sys;
    sys.fs_type = fs;
    auto r = Walk(sys, {dir.path()}, o);
    ASSERT_TRUE(r.ok());
    for (const auto& f : r->files) EXPECT_EQ(f.path.find("secret"), std::string::npos) << f.path;
    ASSERT_EQ(r->problems.size(), 1u) << fs;
    EXPECT_EQ(r->problems[0].path, dir.Join(other));
    const int e = r->problems[0].status.errnum();  // the symlink is the last component
    EXPECT_TRUE(e == ELOOP || e == ENOTDIR || e == ESTALE) << r->problems[0].status.message();
  }
}

// A queued directory replaced by another before it is listed: the other is not walked in
// its place (its files are not the ones the parent listed), and the problem says so.
TEST(Walk, InodeOrderRefusesAReplacedDirectory) {
  for (const char* fs : {"xfs", "tmpfs"}) {
    TempDir dir;
    test::MakeDir(dir.Join("a"));
    test::MakeDir(dir.Join("b"));
    WalkOptions o;
    o.inode_order = true;
    o.on_dir = AtFirstOf(dir, [&](const std::string& name) {
      ASSERT_EQ(::rename(dir.Join(name).c_str(), dir.Join("moved").c_str()), 0);
      test::MakeDir(dir.Join(name));
      test::WriteFile(dir.Join(name + "/planted"), "data");
    });
    XfsSys sys;
    sys.fs_type = fs;
    auto r = Walk(sys, {dir.path()}, o);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->files.empty()) << r->files[0].path;
    ASSERT_EQ(r->problems.size(), 1u) << fs;
    EXPECT_EQ(r->problems[0].status.errnum(), ESTALE);
    EXPECT_NE(r->problems[0].status.message().find("replaced while the walk ran"), std::string::npos);
  }
}

// A queued directory moved out of the roots, its parent replaced by a symlink to where it
// went: the path leads to the very inode queued, and it is still refused, since no
// component of the path may be a symlink.
TEST(Walk, InodeOrderFollowsNoSymlinkAboveAQueuedDirectory) {
  TempDir dir, outside;
  test::MakeDir(dir.Join("x"));
  test::MakeDir(dir.Join("y"));
  test::MakeDir(dir.Join("x/deep"));
  test::WriteFile(dir.Join("x/deep/f"), "data");
  const uint64_t x = test::StatPath(dir.Join("x")).ino, y = test::StatPath(dir.Join("y")).ino;
  const uint64_t deep = test::StatPath(dir.Join("x/deep")).ino, root = test::StatPath(dir.path()).ino;
  // The walk goes up from the root's inode, then wraps: x must come before y.
  if (!(root < x && x < y && y < deep)) GTEST_SKIP() << "inodes not allocated in creation order here";
  WalkOptions o;
  o.inode_order = true;
  o.on_dir = [&](int, const std::string& path, uint32_t) {
    if (path != dir.Join("y")) return;  // x is listed, x/deep queued
    ASSERT_EQ(::rename(dir.Join("x/deep").c_str(), outside.Join("deep").c_str()), 0);
    ASSERT_EQ(::rename(dir.Join("x").c_str(), dir.Join("x.moved").c_str()), 0);
    ASSERT_EQ(::symlink(outside.path().c_str(), dir.Join("x").c_str()), 0);
  };
  auto r = Walk(DefaultSys(), {dir.path()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->files.empty()) << r->files[0].path;
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, dir.Join("x/deep"));
  const int e = r->problems[0].status.errnum();  // x, a symlink now, is not followed
  EXPECT_TRUE(e == ELOOP || e == ENOTDIR) << r->problems[0].status.message();
}

}  // namespace
}  // namespace oans
