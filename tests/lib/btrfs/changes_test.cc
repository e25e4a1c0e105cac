#include "lib/btrfs/changes.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

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
  std::atomic<int> searches{0};  // searched from several threads at once

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

TEST(FollowChangesTest, ManySearchesAtOnceKeepInodeOrderAndTheLimit) {
  FakeTree sys(3000);
  std::vector<uint64_t> inos;
  for (uint64_t ino = 256; ino < 3256; ino += 7) inos.push_back(ino);
  auto odd = [](ChangedInode& i) { return i.ino % 2 == 1; };
  SubvolumeChanges one, many;
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, 1000, &one).ok());
  EXPECT_EQ(sys.searches, 1);  // one run: all within the gap
  sys.searches = 0;
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, 1000, &many, 4, 1).ok());
  EXPECT_EQ(sys.searches, int(inos.size()));  // each its own
  EXPECT_EQ(many.searches, inos.size());
  ASSERT_EQ(many.inodes.size(), one.inodes.size());
  for (size_t i = 0; i < one.inodes.size(); ++i) EXPECT_EQ(many.inodes[i].ino, one.inodes[i].ino);
  EXPECT_EQ(many.quiet, one.quiet);
  EXPECT_FALSE(many.too_many);
  SubvolumeChanges over;  // one more kept than the limit, whichever thread kept it
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, one.inodes.size() - 1, &over, 4, 1).ok());
  EXPECT_TRUE(over.too_many);
  EXPECT_TRUE(over.inodes.empty());
  // The limit counts the inodes already there (a judge's): ten more, over it.
  SubvolumeChanges held;
  held.inodes.resize(10);
  for (size_t i = 0; i < 10; ++i) held.inodes[i].ino = 5000 + i;
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, one.inodes.size() + 9, &held, 4, 1).ok());
  EXPECT_TRUE(held.too_many);
  SubvolumeChanges fits;  // and in inode order with them
  fits.inodes.resize(1);
  fits.inodes[0].ino = 260;
  ASSERT_TRUE(ReadChangedInodes(sys, -1, inos, odd, one.inodes.size() + 1, &fits, 4, 1).ok());
  ASSERT_FALSE(fits.too_many);
  ASSERT_EQ(fits.inodes.size(), one.inodes.size() + 1);
  for (size_t i = 1; i < fits.inodes.size(); ++i) EXPECT_LT(fits.inodes[i - 1].ino, fits.inodes[i].ino);
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

// A subvolume tree of raw items, each in a tree block of its own generation; a search
// with min_transid skips the items of older blocks, as btrfs skips the blocks.
class ItemTree : public test::ForwardingSys {
 public:
  std::map<BtrfsKey, std::pair<uint64_t, std::string>> items;  // key -> (generation, bytes)
  std::atomic<int> searches{0};  // judges in slices search at once

  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    searches++;
    for (auto it = items.lower_bound(s.min); it != items.end() && !(s.max < it->first); ++it) {
      if (it->second.first < s.min_transid) continue;
      if (!visit({it->first, it->second.first, it->second.second})) break;
    }
    return Status::Ok();
  }
  template <typename T>
  static std::string Bytes(const T& v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Inode(uint64_t ino, uint32_t mode, uint64_t size, uint64_t nbytes, uint32_t nlink, uint64_t gen = 50) {
    btrfs_inode_item in;
    std::memset(&in, 0, sizeof in);
    in.size = htole64(size);
    in.nbytes = htole64(nbytes);
    in.nlink = htole32(nlink);
    in.mode = htole32(mode);
    items[{ino, kBtrfsInodeItem, 0}] = {gen, Bytes(in)};
  }
  void Ref(uint64_t ino, uint64_t dir, const std::string& name, uint64_t gen = 50) {
    btrfs_inode_ref r;
    std::memset(&r, 0, sizeof r);
    r.name_len = htole16(uint16_t(name.size()));
    items[{ino, kBtrfsInodeRef, dir}] = {gen, Bytes(r) + name};
  }
  void Entry(uint64_t dir, uint64_t index, uint64_t ino, const std::string& name, uint64_t gen = 50) {
    btrfs_dir_item d;
    std::memset(&d, 0, sizeof d);
    d.location.objectid = htole64(ino);
    d.location.type = kBtrfsInodeItem;
    d.name_len = htole16(uint16_t(name.size()));
    d.type = BTRFS_FT_REG_FILE;
    items[{dir, kBtrfsDirIndex, index}] = {gen, Bytes(d) + name};
  }
  void Extent(uint64_t ino, uint64_t at, uint64_t disk, uint64_t len, uint64_t gen = 50) {
    btrfs_file_extent_item x;
    std::memset(&x, 0, sizeof x);
    x.type = BTRFS_FILE_EXTENT_REG;
    x.disk_bytenr = htole64(disk);
    x.disk_num_bytes = htole64(len);
    x.num_bytes = htole64(len);
    x.ram_bytes = htole64(len);
    items[{ino, kBtrfsExtentData, at}] = {gen, Bytes(x)};
  }
};

// 300: a file whose items all lie in new blocks; 301: one extent in an old block;
// 302: one of its two links in an old block; 303: a directory with its one entry;
// 304: a directory with one of two entries in an old block; 305: all old.
void SixInodes(ItemTree& sys) {
  sys.Inode(300, S_IFREG | 0644, 8192, 8192, 1);
  sys.Ref(300, 303, "a");
  sys.Extent(300, 0, 1 << 20, 4096);
  sys.Extent(300, 4096, 2 << 20, 4096);
  sys.Inode(301, S_IFREG | 0644, 8192, 8192, 1);
  sys.Ref(301, 303, "b");
  sys.Extent(301, 0, 3 << 20, 4096);
  sys.Extent(301, 4096, 4 << 20, 4096, 10);
  sys.Inode(302, S_IFREG | 0644, 4096, 4096, 2);
  sys.Ref(302, 303, "c");
  sys.Ref(302, 304, "c", 10);
  sys.Extent(302, 0, 5 << 20, 4096);
  sys.Inode(303, S_IFDIR | 0755, 2, 0, 1);
  sys.Ref(303, 256, "d");
  sys.Entry(303, 2, 300, "a");
  sys.Inode(304, S_IFDIR | 0755, 4, 0, 1);
  sys.Ref(304, 256, "e");
  sys.Entry(304, 2, 302, "c");
  sys.Entry(304, 3, 310, "y", 10);
  sys.Inode(305, S_IFREG | 0644, 4096, 4096, 1, 10);
  sys.Ref(305, 303, "f", 10);
}

TEST(FollowChangesTest, InodesWholeInTheBlocksWrittenSinceAreJudgedInOneSearch) {
  ItemTree sys;
  SixInodes(sys);

  std::vector<uint64_t> judged;
  auto judge = [&](ChangedInode& c) {
    judged.push_back(c.ino);
    return c.ino == 300;  // unchanged, as its record says
  };
  SubvolumeChanges c;
  std::vector<uint64_t> rest;
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, judge, 100, &rest, &c).ok());
  EXPECT_EQ(sys.searches, 1);
  EXPECT_EQ(c.found, 5u);
  EXPECT_EQ(c.quiet, 1u);
  EXPECT_EQ(judged, (std::vector<uint64_t>{300, 303}));
  EXPECT_EQ(rest, (std::vector<uint64_t>{301, 302, 304}));
  ASSERT_EQ(c.inodes.size(), 1u);
  EXPECT_EQ(c.inodes[0].ino, 303u);

  // The rest read whole, in one search, and kept in inode order.
  ASSERT_TRUE(ReadChangedInodes(sys, -1, rest, judge, 100, &c).ok());
  EXPECT_EQ(sys.searches, 2);
  std::vector<uint64_t> kept;
  for (const auto& i : c.inodes) kept.push_back(i.ino);
  EXPECT_EQ(kept, (std::vector<uint64_t>{301, 302, 303, 304}));
  EXPECT_EQ(c.inodes[0].map.extents.size(), 2u);  // 301: both extents
  EXPECT_EQ(c.inodes[1].links.size(), 2u);        // 302: both links
  EXPECT_EQ(c.inodes[3].entries.size(), 2u);      // 304: both entries
}

// A stop ends the judge's search at the next item, in every slice: Interrupted.
TEST(FollowChangesTest, AStopEndsTheJudge) {
  ItemTree sys;
  SixInodes(sys);
  std::atomic<bool> stop{false};
  std::vector<uint64_t> judged;
  auto judge = [&](ChangedInode& c) {
    judged.push_back(c.ino);
    stop = true;  // as a signal would, while the first inode is judged
    return false;
  };
  SubvolumeChanges c;
  std::vector<uint64_t> rest;
  Status s = JudgeChangedInodes(sys, -1, 40, judge, 100, &rest, &c, {}, kBtrfsFirstInode, kBtrfsLastInode, &stop);
  EXPECT_EQ(s.code(), Status::Code::kInterrupted) << s.message();
  EXPECT_LE(judged.size(), 1u);
  SubvolumeChanges d;
  Status sliced = JudgeChangedInodes(sys, -1, 40, judge, 100, &rest, &d, {302, 304}, kBtrfsFirstInode,
                                     kBtrfsLastInode, &stop);
  EXPECT_EQ(sliced.code(), Status::Code::kInterrupted) << sliced.message();
}

// Judged in slices, one thread each: the same inodes found, judged and kept, in inode
// order, one search a slice.
TEST(FollowChangesTest, SlicesJudgeAsOneSearchDoes) {
  ItemTree sys;
  SixInodes(sys);
  std::mutex mu;
  std::vector<uint64_t> judged;
  auto judge = [&](ChangedInode& c) {
    std::lock_guard<std::mutex> lock(mu);
    judged.push_back(c.ino);
    return c.ino == 300;
  };
  SubvolumeChanges c;
  std::vector<uint64_t> rest;
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, judge, 100, &rest, &c, {302, 304}).ok());
  EXPECT_EQ(sys.searches, 3);
  EXPECT_EQ(c.found, 5u);
  EXPECT_EQ(c.quiet, 1u);
  std::sort(judged.begin(), judged.end());
  EXPECT_EQ(judged, (std::vector<uint64_t>{300, 303}));
  EXPECT_EQ(rest, (std::vector<uint64_t>{301, 302, 304}));
  ASSERT_EQ(c.inodes.size(), 1u);
  EXPECT_EQ(c.inodes[0].ino, 303u);
  EXPECT_FALSE(c.too_many);

  // Cuts out of order, repeated, or outside the inodes' numbers change nothing.
  SubvolumeChanges odd;
  std::vector<uint64_t> odd_rest;
  sys.searches = 0;
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, [](ChangedInode& i) { return i.ino == 300; }, 100, &odd_rest, &odd,
                                 {0, 256, 302, 302, 301, ~uint64_t(0)})
                  .ok());
  EXPECT_EQ(sys.searches, 2);
  EXPECT_EQ(odd.found, 5u);
  EXPECT_EQ(odd_rest, (std::vector<uint64_t>{301, 302, 304}));
  ASSERT_EQ(odd.inodes.size(), 1u);
  EXPECT_EQ(odd.inodes[0].ino, 303u);

  // The limit counts what every slice keeps: two kept in two slices is past a limit of 1.
  SubvolumeChanges over;
  std::vector<uint64_t> more;
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, [](ChangedInode&) { return false; }, 1, &more, &over, {303}).ok());
  EXPECT_TRUE(over.too_many);
  EXPECT_TRUE(over.inodes.empty());
}

// A pass over a range of inode numbers: only the inodes numbered first to last are
// found and judged, each once over passes that meet end to end.
TEST(FollowChangesTest, ARangeOfNumbersIsJudgedAloneAndRangesEndToEndJudgeEachOnce) {
  ItemTree sys;
  SixInodes(sys);
  SubvolumeChanges part;
  std::vector<uint64_t> rest, judged;
  auto judge = [&](ChangedInode& c) {
    judged.push_back(c.ino);
    return c.ino == 300;
  };
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, judge, 100, &rest, &part, {}, 301, 303).ok());
  EXPECT_EQ(part.found, 3u);
  EXPECT_EQ(judged, std::vector<uint64_t>{303});
  EXPECT_EQ(rest, (std::vector<uint64_t>{301, 302}));

  // Passes [0, 302), [302, 304), [304, end]: the same as one search, slices within.
  SubvolumeChanges whole;
  std::vector<uint64_t> whole_rest;
  judged.clear();
  const std::vector<std::pair<uint64_t, uint64_t>> passes = {{0, 301}, {302, 303}, {304, ~uint64_t(0)}};
  for (const auto& [first, last] : passes) {
    SubvolumeChanges pass;
    std::vector<uint64_t> pass_rest;
    ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, judge, 100, &pass_rest, &pass, {301, 303}, first, last).ok());
    whole.found += pass.found;
    whole.quiet += pass.quiet;
    for (auto& c : pass.inodes) whole.inodes.push_back(std::move(c));
    whole_rest.insert(whole_rest.end(), pass_rest.begin(), pass_rest.end());
  }
  EXPECT_EQ(whole.found, 5u);
  EXPECT_EQ(whole.quiet, 1u);
  EXPECT_EQ(judged, (std::vector<uint64_t>{300, 303}));
  EXPECT_EQ(whole_rest, (std::vector<uint64_t>{301, 302, 304}));
  ASSERT_EQ(whole.inodes.size(), 1u);
  EXPECT_EQ(whole.inodes[0].ino, 303u);

  // A range holding no inode number finds nothing.
  SubvolumeChanges none;
  std::vector<uint64_t> none_rest;
  ASSERT_TRUE(JudgeChangedInodes(sys, -1, 40, judge, 100, &none_rest, &none, {}, 310, 305).ok());
  EXPECT_EQ(none.found, 0u);
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
