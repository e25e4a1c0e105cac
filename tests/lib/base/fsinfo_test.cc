#include "lib/base/fsinfo.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

TEST(FsinfoTest, MountPointsWithEscapes) {
  const std::string path = ::testing::TempDir() + "/mountinfo-test";
  {
    std::ofstream f(path);
    f << "22 1 0:21 / / rw,relatime shared:1 - btrfs /dev/vda rw\n"
      << "35 22 0:33 / /srv/a\\040b rw - tmpfs none rw\n"
      << "36 22 0:34 /sub /srv/tab\\011x\\134y rw - btrfs /dev/vdb rw\n"
      << "37 22 0:35 / /srv/not\\08 rw - tmpfs none rw\n";
  }
  auto m = ReadMountPoints(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0], "/");
  EXPECT_EQ((*m)[1], "/srv/a b");
  EXPECT_EQ((*m)[2], "/srv/tab\tx\\y");
  EXPECT_EQ((*m)[3], "/srv/not\\08");  // not three octal digits: as written
  std::remove(path.c_str());
}

TEST(FsinfoTest, MountPointsDamagedOrMissing) {
  const std::string path = ::testing::TempDir() + "/mountinfo-bad";
  {
    std::ofstream f(path);
    f << "22 1 0:21\n";
  }
  EXPECT_FALSE(ReadMountPoints(path).ok());
  std::remove(path.c_str());
  EXPECT_FALSE(ReadMountPoints(path).ok());
}

// Hardlink mode decides who reaches a file from its paths only on a device mounted once,
// at its root (lib/apply/hardlink.cc).
TEST(FsinfoTest, DeviceMountsCountsMountsAndSubtrees) {
  const std::string path = ::testing::TempDir() + "/mountinfo-dev";
  {
    std::ofstream f(path);
    f << "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
         "30 22 8:2 / /srv rw - ext4 /dev/sda2 rw\n"
         "31 22 8:2 /home/carol/public /var/www/carol rw - ext4 /dev/sda2 rw\n"
         "32 22 8:3 / /mnt/a rw - ext4 /dev/sda3 rw\n"
         "33 22 8:3 / /mnt/b rw - ext4 /dev/sda3 rw\n";
  }
  auto once = ReadDeviceMounts(path, makedev(8, 1));
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(once->count, 1u);
  EXPECT_FALSE(once->subtree);
  auto bound = ReadDeviceMounts(path, makedev(8, 2));
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->count, 2u);
  EXPECT_TRUE(bound->subtree);
  auto twice = ReadDeviceMounts(path, makedev(8, 3));
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->count, 2u);
  EXPECT_FALSE(twice->subtree);
  EXPECT_EQ(ReadDeviceMounts(path, makedev(9, 9))->count, 0u);
  { std::ofstream(path) << "garbage\n"; }
  EXPECT_FALSE(ReadDeviceMounts(path, makedev(8, 1)).ok());
  std::remove(path.c_str());
}

TEST(FsinfoTest, ThisProcessHasARoot) {
  auto m = ReadMountPoints("/proc/self/mountinfo");
  ASSERT_TRUE(m.ok());
  EXPECT_NE(std::find(m->begin(), m->end(), "/"), m->end());
}

// The rule for sharing data: tmpfs cannot (the fix is named), hardlinks can anywhere, and
// a filesystem the rule does not know (proc) passes. XFS and ext4 are in
// tests/integration/fs_cannot_share.sh, on real images.
TEST(FsinfoTest, CanShareDataRule) {
  struct statfs s;
  if (::statfs("/dev/shm", &s) != 0 || s.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  Status refused = CheckPathCanShareData("/dev/shm", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "/dev/shm is on tmpfs, which cannot share data between files: give --link=hard to "
                               "replace identical files by hardlinks instead");
  EXPECT_TRUE(CheckPathCanShareData("/dev/shm", true).ok());
  EXPECT_TRUE(CheckPathCanShareData("/proc", false).ok());
  EXPECT_TRUE(CheckPathCanShareData("/proc/self/status", false).ok());  // a file: its directory's filesystem
  EXPECT_FALSE(CheckPathCanShareData("/no/such/path", false).ok());
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// A followed scan reads btrfs's tree blocks from the device path btrfs names: only a
// block device is read, whatever that path is, or a symlink there leads to; a FIFO is
// not opened for reading (it would wait for a writer).
TEST(FsinfoTest, OnlyABlockDeviceIsOpenedForItsTreeBlocks) {
  test::TempDir dir;
  const std::string file = dir.path() + "/file", fifo = dir.path() + "/fifo", link = dir.path() + "/link";
  { std::ofstream(file) << "not a device"; }
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  for (const std::string& p : {file, fifo, link, std::string("/dev/null")}) {
    auto fd = OpenBlockDeviceFile(p);
    EXPECT_FALSE(fd.ok()) << p;
    if (fd.ok()) ::close(*fd);
    else EXPECT_NE(fd.status().message().find("not a block device"), std::string::npos) << fd.status().message();
  }
}

}  // namespace
}  // namespace oans
