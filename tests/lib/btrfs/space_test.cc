#include "lib/btrfs/space.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <unistd.h>

namespace oans {
namespace {

TEST(BtrfsProfileCopies, EachProfile) {
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_DATA), 1u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID0), 1u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP), 2u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1), 2u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID10), 2u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C3), 3u);
  EXPECT_EQ(BtrfsProfileCopies(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C4), 4u);
}

// Elsewhere than btrfs, statfs's used blocks, all counted as data.
TEST(MeasureSpace, StatfsElsewhere) {
  const int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto use = MeasureSpace(fd);
  ::close(fd);
  ASSERT_TRUE(use.ok()) << use.status().message();
  EXPECT_FALSE(use->btrfs);
  EXPECT_EQ(use->metadata_bytes, 0u);
}

}  // namespace
}  // namespace oans
