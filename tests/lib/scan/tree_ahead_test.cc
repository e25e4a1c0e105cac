// The tree read-ahead of spinning disks (lib/scan/tree_ahead.h): which trees it reads, in
// which order, and where --memory stops it.
#include "lib/scan/tree_ahead.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "lib/base/btrfs_search.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

// Two trees of items: the subvolume's (tree 0 through the descriptor) and the checksum
// tree, each with a few other keys the search must not reach.
class FakeTrees : public test::ForwardingSys {
 public:
  std::map<uint64_t, std::map<BtrfsKey, std::string>> trees;
  std::vector<BtrfsSearch> searches;
  std::vector<BtrfsKey> visited;
  Status fail;

  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    searches.push_back(s);
    if (!fail.ok()) return fail;
    const auto& items = trees[s.tree_id];
    for (auto it = items.lower_bound(s.min); it != items.end() && !(s.max < it->first); ++it) {
      visited.push_back(it->first);
      if (!visit({it->first, 1, it->second})) break;
    }
    return Status::Ok();
  }

  FakeTrees() {
    for (uint64_t ino = 256; ino < 266; ++ino) {
      trees[0][{ino, kBtrfsInodeItem, 0}] = std::string(160, 'i');
      trees[0][{ino, kBtrfsExtentData, 0}] = std::string(53, 'x');
    }
    trees[kBtrfsCsumTree][{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 1 << 20}] = std::string(400, 'c');
    trees[kBtrfsCsumTree][{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 8 << 20}] = std::string(400, 'c');
    // Not checksums: a log tree's or relocation's items would sit outside the range.
    trees[kBtrfsCsumTree][{kBtrfsExtentCsumObjectid + 1, kBtrfsExtentCsum, 0}] = std::string(999, 'o');
  }
};

TEST(TreeAhead, ReadsTheSubvolumeThenTheChecksumsInKeyOrder) {
  FakeTrees sys;
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, 1 << 20, &stats).ok());
  ASSERT_EQ(sys.searches.size(), 2u);
  EXPECT_EQ(sys.searches[0].tree_id, 0u);
  EXPECT_EQ(sys.searches[1].tree_id, kBtrfsCsumTree);
  EXPECT_EQ(sys.visited.size(), 22u);
  EXPECT_TRUE(std::is_sorted(sys.visited.begin(), sys.visited.begin() + 20));
  EXPECT_EQ(stats.bytes, 10u * (160 + 53) + 2 * 400);  // the other item is not reached
  EXPECT_FALSE(stats.cut_short);
}

TEST(TreeAhead, StopsAtTheBudgetAndSaysSo) {
  FakeTrees sys;
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, 1000, &stats).ok());
  EXPECT_TRUE(stats.cut_short);
  EXPECT_EQ(sys.searches.size(), 1u);  // the checksum tree is not started
  // 160 + 53 + ... : the ninth item brings it to 1012, past the budget.
  EXPECT_EQ(sys.visited.size(), 9u);
  EXPECT_EQ(stats.bytes, 1012u);

  // A second root's call on a spent budget reads nothing.
  TreeAheadStats spent = stats;
  sys.searches.clear();
  ASSERT_TRUE(ReadTreesAhead(sys, 4, 1000, &spent).ok());
  EXPECT_TRUE(sys.searches.empty());
  EXPECT_EQ(spent.bytes, stats.bytes);
}

TEST(TreeAhead, ASearchErrorIsReturned) {
  FakeTrees sys;
  sys.fail = Status::Io("BTRFS_IOC_TREE_SEARCH_V2", 1);
  TreeAheadStats stats;
  Status s = ReadTreesAhead(sys, 3, 1 << 20, &stats);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(stats.bytes, 0u);
}

}  // namespace
}  // namespace oans
