// Status::Unsupported, and the default methods of the Sys interfaces that return it.
#include "lib/base/sys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

// A Sys with only the methods every Sys must have; the rest are the defaults.
class BareSys : public Sys {
 public:
  Result<int> OpenNoFollow(const std::string&) override { return 3; }
  Result<int> OpenAt(int, const std::string&, bool) override { return 3; }
  void Close(int) override {}
  Result<FileStat> Fstat(int) override { return FileStat{}; }
  Result<FileStat> StatAt(int, const std::string&) override { return FileStat{}; }
  Status Fiemap(int, std::vector<FiemapExtent>*) override { return Status::Ok(); }
  Result<size_t> Pread(int, void*, size_t, uint64_t) override { return size_t{0}; }
  Status DedupeRange(int, uint64_t, uint64_t, std::vector<DedupeDest>*) override { return Status::Ok(); }
  Result<bool> ReadDir(int, std::vector<DirEntry>*) override { return false; }
  uint32_t InodeFlags(int) override { return 0; }
  Result<FsIdentity> Identify(int) override { return FsIdentity{}; }
};

TEST(StatusUnsupported, SaysWhatIsNotSupportedAndIsNoOtherCode) {
  const Status s = Status::Unsupported("btrfs tree search");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsUnsupported());
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_EQ(s.message(), "btrfs tree search is not supported here");
  EXPECT_EQ(s.errnum(), 0);
  EXPECT_TRUE(s.Prepend("/mnt").IsUnsupported());
  EXPECT_FALSE(Status::Ok().IsUnsupported());
  EXPECT_FALSE(Status::Invalid("btrfs tree search is not supported here").IsUnsupported());
  EXPECT_FALSE(Status::Io("link", EOPNOTSUPP).IsUnsupported());
}

// Each default that cannot do its job says so with the one status, naming what it is.
TEST(SysDefaults, WhatASysCannotDoIsUnsupported) {
  BareSys sys;
  std::vector<uint64_t> inodes;
  const std::vector<std::pair<Status, std::string>> got = {
      {sys.Usage(3).status(), "filesystem usage"},
      {sys.MeasureSpace(3).status(), "measuring filesystem space"},
      {sys.ChangedInodes(3, 1, 256, 1000, &inodes), "changed-inode search"},
      {sys.TreeSearch(3, BtrfsSearch{}, [](const BtrfsItem&) { return true; }), "btrfs tree search"},
      {sys.BtrfsInfoOf(3).status(), "BTRFS_IOC_FS_INFO"},
      {sys.DirectoryPath(3, 5, 256).status(), "BTRFS_IOC_INO_LOOKUP"},
      {sys.BtrfsDevicePath(3, 1).status(), "BTRFS_IOC_DEV_INFO"},
      {sys.OpenBlockDevice("/dev/sda").status(), "opening a block device"},
      {sys.OpenDirNoFollow("/").status(), "opening a directory"},
      {sys.SetLease(3, true), "file leases"},
      {sys.LinkAt(3, 4, "b"), "link b"},
      {sys.ExchangeAt(4, "a", "b"), "exchange a"},
      {sys.UnlinkAt(4, "a"), "unlink a"},
      {sys.OpenTmpfile(4).status(), "creating a temporary file"},
      {sys.SetInodeFlags(3, 0), "setting inode flags"},
      {sys.Pwrite(3, "x", 1, 0), "writing"},
      {sys.ReadDirectoryInDiskOrder(3).status(), "reading a directory in disk order"},
  };
  for (const auto& [s, what] : got)
    EXPECT_TRUE(test::StatusIs(s, Status::Code::kUnsupported, what + " is not supported here")) << what;
}

// The defaults that are only hints or facts answer without an error.
TEST(SysDefaults, HintsAndFactsNeedNoSupport) {
  BareSys sys;
  EXPECT_TRUE(sys.Syncfs(3).ok());
  EXPECT_FALSE(sys.LeaseHeld(3));
  auto x = sys.Xattrs(3);
  ASSERT_TRUE(x.ok());
  EXPECT_TRUE(x->empty());
  auto m = sys.MountsOf(1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->count, 1u);
  EXPECT_EQ(sys.Seek(3, 10, false), 10u);
  EXPECT_EQ(sys.Seek(3, 10, true), UINT64_MAX);
}

// One object, three interfaces: code that takes one concern reaches the same methods.
TEST(SysConcerns, ANarrowInterfaceReachesTheSameSys) {
  class Counting : public BareSys {
   public:
    int stats = 0, searches = 0, links = 0;
    Result<FileStat> Fstat(int) override {
      stats++;
      return FileStat{};
    }
    Status TreeSearch(int, const BtrfsSearch&, const BtrfsVisitor&) override {
      searches++;
      return Status::Ok();
    }
    Status LinkAt(int, int, const std::string&) override {
      links++;
      return Status::Ok();
    }
  } sys;
  FileSys& files = sys;
  BtrfsSys& btrfs = sys;
  LinkSys& link = sys;
  EXPECT_TRUE(files.Fstat(3).ok());
  EXPECT_TRUE(btrfs.TreeSearch(3, BtrfsSearch{}, [](const BtrfsItem&) { return true; }).ok());
  EXPECT_TRUE(link.LinkAt(3, 4, "b").ok());
  EXPECT_EQ(sys.stats, 1);
  EXPECT_EQ(sys.searches, 1);
  EXPECT_EQ(sys.links, 1);
}

}  // namespace
}  // namespace oans
