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

TEST(FollowChangesTest, EveryInodeInTheChangedBlocksIsReadInOneSearchNotOneEach) {
  FakeTree sys(500);
  SubvolumeChanges c;
  ASSERT_TRUE(FindSubvolumeChanges(sys, -1, 9, &c).ok());
  EXPECT_FALSE(c.too_many);
  ASSERT_EQ(c.inodes.size(), 500u);
  for (const auto& i : c.inodes) EXPECT_TRUE(i.exists) << i.ino;
  EXPECT_EQ(sys.searches, 2);  // the change search, then one for the run of inodes
  EXPECT_EQ(c.searches, 2u);
}

TEST(FollowChangesTest, DirectoryLinksAreReadPerRunOfInodes) {
  FakeTree sys(3000);
  std::map<uint64_t, DirLink> links;
  uint64_t searches = 0;
  // Two runs: 256-300 and 2900-2901 (more than the gap apart).
  std::vector<uint64_t> inos;
  for (uint64_t i = 256; i <= 300; ++i) inos.push_back(i);
  inos.push_back(2900);
  inos.push_back(2901);
  ASSERT_TRUE(ReadDirLinks(sys, -1, inos, &links, &searches).ok());
  EXPECT_EQ(searches, 2u);
  EXPECT_TRUE(links.empty());  // the fake tree has inode items only
}

TEST(FollowChangesTest, InodesTheCallerTakesAreLeftOutAndNotCountedAgainstTheLimit) {
  FakeTree sys(500);
  std::vector<uint64_t> inos;
  bool over = false;
  uint64_t searches = 0;
  ASSERT_TRUE(ChangedInodeNumbers(sys, -1, 9, 1000, &inos, &over, &searches).ok());
  ASSERT_EQ(inos.size(), 500u);
  EXPECT_FALSE(over);
  SubvolumeChanges c;
  auto odd = [](ChangedInode& i) { return i.ino % 2 == 1; };
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, 250, &c).ok());
  EXPECT_FALSE(c.too_many);
  EXPECT_EQ(c.inodes.size(), 250u);
  EXPECT_EQ(c.quiet, 250u);
  for (const auto& i : c.inodes) EXPECT_EQ(i.ino % 2, 0u) << i.ino;

  SubvolumeChanges d;  // one more kept than the limit
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, 249, &d).ok());
  EXPECT_TRUE(d.too_many);
  EXPECT_TRUE(d.inodes.empty());
}

TEST(FollowChangesTest, PastTheCapTheNumbersStop) {
  FakeTree sys(50);
  std::vector<uint64_t> inos;
  bool over = false;
  uint64_t searches = 0;
  ASSERT_TRUE(ChangedInodeNumbers(sys, -1, 9, 10, &inos, &over, &searches).ok());
  EXPECT_TRUE(over);
  EXPECT_EQ(searches, 1u);
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
