#include "lib/btrfs/changes.h"

#include <gtest/gtest.h>

#include "lib/base/fsinfo.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

// A subvolume tree of `inodes` inodes, each with an inode item, served from memory;
// counts the searches.
class FakeTree : public test::ForwardingSys {
 public:
  explicit FakeTree(uint64_t inodes) : inodes_(inodes) {}
  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    searches++;
    std::string item(160, '\0');  // sizeof(btrfs_inode_item), all zero: mode 0, not a file
    for (uint64_t ino = kBtrfsFirstInode; ino < kBtrfsFirstInode + inodes_; ++ino) {
      BtrfsItem it;
      it.key = {ino, kBtrfsInodeItem, 0};
      it.transid = 10;
      it.data = item;
      if (it.key < s.min || s.max < it.key) continue;
      if (!visit(it)) break;
    }
    return Status::Ok();
  }
  int searches = 0;

 private:
  uint64_t inodes_;
};

TEST(FollowChangesTest, EveryInodeInTheChangedBlocksIsLookedUp) {
  FakeTree sys(5);
  SubvolumeChanges c;
  ASSERT_TRUE(FindSubvolumeChanges(sys, -1, 9, &c).ok());
  EXPECT_FALSE(c.too_many);
  ASSERT_EQ(c.inodes.size(), 5u);
  EXPECT_TRUE(c.inodes[0].exists);
  EXPECT_EQ(sys.searches, 1 + 5);  // the change search, then one per inode
}

TEST(FollowChangesTest, PastTheLimitNothingIsLookedUpAndTheCallerWalks) {
  FakeTree sys(50);
  SubvolumeChanges c;
  ASSERT_TRUE(FindSubvolumeChanges(sys, -1, 9, &c, 10).ok());
  EXPECT_TRUE(c.too_many);
  EXPECT_TRUE(c.inodes.empty());
  EXPECT_EQ(sys.searches, 1);
}

}  // namespace
}  // namespace oans
