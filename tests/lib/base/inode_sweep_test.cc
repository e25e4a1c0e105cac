#include "lib/base/inode_sweep.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

InodeSweepCase Case(uint64_t table_mib, uint64_t used, uint64_t tree, bool mount, uint64_t available_mib) {
  InodeSweepCase c;
  c.table_bytes = table_mib * kMiB;
  c.used_inodes = used;
  c.tree_files = tree;
  c.root_is_mount = mount;
  c.available = available_mib * kMiB;
  return c;
}

TEST(InodeSweepTest, SweepsASmallFilesystemWhateverTheRootsHold) {
  EXPECT_EQ(InodeSweepRefusal(Case(80, 160000, 0, false, 4096)), "");
  EXPECT_EQ(InodeSweepRefusal(Case(256, 500000, 10, false, 4096)), "");
}

TEST(InodeSweepTest, ALargeOneOnlyWhenTheRootsHoldEnoughOfIt) {
  EXPECT_NE(InodeSweepRefusal(Case(2048, 4000000, 0, false, 16384)), "");        // not known
  EXPECT_NE(InodeSweepRefusal(Case(2048, 4000000, 999999, false, 16384)), "");   // under a quarter
  EXPECT_EQ(InodeSweepRefusal(Case(2048, 4000000, 1000000, false, 16384)), "");  // a quarter
  EXPECT_EQ(InodeSweepRefusal(Case(2048, 4000000, 0, true, 16384)), "");         // the mount point
}

TEST(InodeSweepTest, NeverWhatWouldNotStayCached) {
  EXPECT_NE(InodeSweepRefusal(Case(80, 160000, 160000, true, 319)), "");
  EXPECT_EQ(InodeSweepRefusal(Case(80, 160000, 160000, true, 320)), "");
  InodeSweepCase after = Case(80, 160000, 160000, true, 640);  // room for 160 MiB
  after.swept_before = uint64_t(80) << 20;
  EXPECT_EQ(InodeSweepRefusal(after), "");
  after.swept_before += 1;  // another filesystem's tables took the rest
  EXPECT_NE(InodeSweepRefusal(after), "");
  const std::string unknown = InodeSweepRefusal(Case(1, 1000, 1000, true, 0));
  EXPECT_NE(unknown.find("not known"), std::string::npos) << unknown;
}

// An XFS of 1,000 inodes of 512 bytes, or another filesystem; counts the sweeps.
class SweepSys : public test::ForwardingSys {
 public:
  Result<FsIdentity> Identify(int fd) override {
    auto id = test::ForwardingSys::Identify(fd);
    if (id.ok()) id->type = type;
    return id;
  }
  Result<uint32_t> InodeSize(int fd) override {
    (void)fd;
    if (type != "xfs") return Status::Unsupported("inode size");
    return uint32_t(512);
  }
  Result<FsUsage> Usage(int fd) override {
    (void)fd;
    return FsUsage{1 << 20, 1000};
  }
  Status ReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) override {
    (void)fd;
    ++sweeps;
    if (denied) return Status::Io("XFS_IOC_BULKSTAT", EPERM);
    if (stop()) return Status::Ok();
    out->inodes = 1000;
    return Status::Ok();
  }
  uint64_t MemoryAvailable() override { return available; }
  std::string type = "xfs";
  uint64_t available = uint64_t(1) << 30;
  int sweeps = 0;
  bool denied = false;
};

struct Notices {
  std::vector<std::string> notices;
  std::function<void(const std::string&)> Tell() {
    return [this](const std::string& text) { notices.push_back(text); };
  }
};

InodeSweep Sweep(Sys& sys, const std::vector<std::string>& roots, Notices* observer, uint64_t tree_files = 0,
                 const std::atomic<bool>* stop = nullptr) {
  return SweepInodeTables(sys, roots, tree_files, [stop] { return stop && stop->load(); }, observer->Tell());
}

TEST(InodeSweepTest, OnceForEachXfsFilesystemOfTheRoots) {
  test::TempDir dir;
  SweepSys sys;
  Notices observer;
  const InodeSweep swept = Sweep(sys, {dir.path(), dir.path() + "/."}, &observer);
  EXPECT_EQ(sys.sweeps, 1);
  EXPECT_EQ(swept.inodes, 1000u);
  EXPECT_EQ(swept.bytes, 512000u);
  EXPECT_TRUE(observer.notices.empty());
}

TEST(InodeSweepTest, NoneOffXfsAndSaysWhyWhenRefused) {
  test::TempDir dir;
  SweepSys sys;
  sys.type = "ext4";
  Notices observer;
  EXPECT_EQ(Sweep(sys, {dir.path()}, &observer).inodes, 0u);
  EXPECT_EQ(sys.sweeps, 0);
  EXPECT_TRUE(observer.notices.empty());
  sys.type = "xfs";
  sys.available = 1 << 20;  // a quarter of it is under the 512,000 bytes of tables
  EXPECT_EQ(Sweep(sys, {dir.path()}, &observer).inodes, 0u);
  EXPECT_EQ(sys.sweeps, 0);
  ASSERT_EQ(observer.notices.size(), 1u);
  EXPECT_NE(observer.notices[0].find("would not stay cached"), std::string::npos) << observer.notices[0];
}

TEST(InodeSweepTest, WithoutThePrivilegeSaysWhatItNeeds) {
  test::TempDir dir;
  SweepSys sys;
  sys.denied = true;
  Notices observer;
  EXPECT_EQ(Sweep(sys, {dir.path()}, &observer).inodes, 0u);
  ASSERT_EQ(observer.notices.size(), 1u);
  EXPECT_NE(observer.notices[0].find("CAP_SYS_ADMIN"), std::string::npos) << observer.notices[0];
  EXPECT_EQ(observer.notices[0].find("warning"), std::string::npos) << observer.notices[0];
}

TEST(InodeSweepTest, ARootThatIsASymlinkIsNotFollowed) {
  test::TempDir dir;
  ASSERT_EQ(::mkdir((dir.path() + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (dir.path() + "/link").c_str()), 0);
  SweepSys sys;
  Notices observer;
  EXPECT_EQ(Sweep(sys, {dir.path() + "/link"}, &observer).inodes, 0u);
  EXPECT_EQ(sys.sweeps, 0);
  EXPECT_EQ(Sweep(sys, {dir.path() + "/real"}, &observer).inodes, 1000u);  // the same directory by its name
}

TEST(InodeSweepTest, StoppedBeforeItStarts) {
  test::TempDir dir;
  SweepSys sys;
  Notices observer;
  std::atomic<bool> stop{true};
  EXPECT_EQ(Sweep(sys, {dir.path()}, &observer, 0, &stop).inodes, 0u);
  EXPECT_EQ(sys.sweeps, 0);
}

}  // namespace
}  // namespace oans
