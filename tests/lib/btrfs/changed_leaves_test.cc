// A followed scan's leaves written since, read from the device (lib/btrfs/changed_leaves.h):
// the items the search with min_transid returns, in key order; a leaf that is not the one
// laid out hands the rest of the range to the kernel's search.
#include "lib/btrfs/changed_leaves.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "lib/base/crc32c.h"
#include "lib/btrfs/csum.h"
#include "tests/lib/btrfs/fake_device.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint64_t kSubvol = 257;
constexpr uint32_t kNode = 16384;
constexpr uint64_t kChunkLogical = 1ull << 30, kChunkPhysical = 100ull << 20;
constexpr int kDeviceFd = 979;
constexpr uint64_t kRootBytenr = kChunkLogical;

using test::Put;

// A subvolume tree of one root node over leaves, each holding the items of some inodes,
// laid out on a device in an order unlike their keys. Searches of the subvolume are
// served from the leaves as they are now (`live`), as the kernel's are.
class FakeDevice : public test::FakeBtrfsDevice {
 public:
  struct Leaf {
    uint64_t slot;  // its place in the chunk, in blocks
    uint64_t generation;
    std::map<BtrfsKey, std::string> items;
  };
  std::vector<Leaf> leaves;  // in key order
  std::map<uint64_t, std::string> disk;  // physical offset -> block
  std::vector<std::pair<uint64_t, uint64_t>> reads;  // (offset, length) of each read of the device
  std::vector<BtrfsSearch> subvolume_searches;
  std::mutex mu;

  FakeDevice() : FakeBtrfsDevice(kSubvol, kNode, kDeviceFd) {
    // Inodes 256-259 in a leaf of generation 50 at slot 7, 260-263 (40) at slot 3,
    // 264-267 (50) at slot 5, 268-271 (50) at slot 6.
    const uint64_t slots[] = {7, 3, 5, 6}, gens[] = {50, 40, 50, 50};
    for (uint64_t l = 0; l < 4; ++l) {
      Leaf leaf{slots[l], gens[l], {}};
      for (uint64_t ino = 256 + 4 * l; ino < 260 + 4 * l; ++ino) {
        leaf.items[{ino, kBtrfsInodeItem, 0}] = std::string(160, char('a' + l));
        leaf.items[{ino, kBtrfsExtentData, 0}] = std::string(53, char('A' + l));
      }
      leaves.push_back(leaf);
    }
    Write();
  }

  // Instead: `n` leaves one after another on the disk (slots 1 to n), inode 256 + i in
  // leaf i, all of generation 50.
  void Many(uint64_t n) {
    leaves.clear();
    for (uint64_t i = 0; i < n; ++i) {
      Leaf leaf{1 + i, 50, {}};
      leaf.items[{256 + i, kBtrfsInodeItem, 0}] = std::string(160, 'i');
      leaf.items[{256 + i, kBtrfsExtentData, 0}] = std::string(53, 'x');
      leaves.push_back(leaf);
    }
    Write();
  }

  static uint64_t Physical(uint64_t slot) { return kChunkPhysical + slot * kNode; }
  static uint64_t Logical(uint64_t slot) { return kChunkLogical + slot * kNode; }

  static void Header(std::string* b, uint64_t bytenr, uint64_t gen, uint32_t n, uint8_t level) {
    for (int i = 0; i < 16; ++i) (*b)[32 + i] = 0x11;
    Put<uint64_t>(b, 48, bytenr);
    Put<uint64_t>(b, 80, gen);
    Put<uint64_t>(b, 88, kSubvol);
    Put<uint32_t>(b, 96, n);
    (*b)[100] = char(level);
  }
  static void Sum(std::string* b) { Put<uint32_t>(b, 0, Crc32c(0, b->data() + 32, b->size() - 32)); }

  std::string LeafBlock(const Leaf& leaf) const {
    std::string b(kNode, '\0');
    Header(&b, Logical(leaf.slot), leaf.generation, uint32_t(leaf.items.size()), 0);
    uint32_t end = kNode - 101, i = 0;
    for (const auto& [key, data] : leaf.items) {
      end -= uint32_t(data.size());
      const size_t at = 101 + i++ * 25;
      Put<uint64_t>(&b, at, key.objectid);
      b[at + 8] = char(key.type);
      Put<uint64_t>(&b, at + 9, key.offset);
      Put<uint32_t>(&b, at + 17, end);
      Put<uint32_t>(&b, at + 21, uint32_t(data.size()));
      std::memcpy(b.data() + 101 + end, data.data(), data.size());
    }
    Sum(&b);
    return b;
  }

  // The root node (slot 0) and every leaf, on the device.
  void Write() {
    disk.clear();
    std::string root(kNode, '\0');
    Header(&root, kRootBytenr, 50, uint32_t(leaves.size()), 1);
    for (size_t i = 0; i < leaves.size(); ++i) {
      const size_t at = 101 + i * 33;
      const BtrfsKey k = leaves[i].items.begin()->first;
      Put<uint64_t>(&root, at, k.objectid);
      root[at + 8] = char(k.type);
      Put<uint64_t>(&root, at + 9, k.offset);
      Put<uint64_t>(&root, at + 17, Logical(leaves[i].slot));
      Put<uint64_t>(&root, at + 25, leaves[i].generation);
      disk[Physical(leaves[i].slot)] = LeafBlock(leaves[i]);
    }
    Sum(&root);
    disk[Physical(0)] = root;
  }

  // Blocks not on the disk read as zeros.
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    EXPECT_EQ(fd, kDeviceFd);
    EXPECT_EQ(offset % 4096, 0u);
    std::lock_guard<std::mutex> hold(mu);
    reads.emplace_back(offset, len);
    std::memset(buf, 0, len);
    for (uint64_t at = offset; at < offset + len; at += kNode) {
      auto it = disk.find(at);
      if (it != disk.end()) std::memcpy(static_cast<char*>(buf) + (at - offset), it->second.data(), kNode);
    }
    return len;
  }
  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    if (s.tree_id == kBtrfsRootTree) {
      const std::string data = test::RootItem(kRootBytenr, 50, (leaves.size() + 1) * kNode, 1);
      visit({{kSubvol, kBtrfsRootItem, 0}, 50, data});
      return Status::Ok();
    }
    if (s.tree_id == kBtrfsChunkTree) {
      const std::string data = test::ChunkItem(BTRFS_BLOCK_GROUP_METADATA, kChunkPhysical, 64ull << 20);
      visit({{kBtrfsFirstChunkTreeObjectid, kBtrfsChunkItem, kChunkLogical}, 1, data});
      return Status::Ok();
    }
    {
      std::lock_guard<std::mutex> hold(mu);
      subvolume_searches.push_back(s);
    }
    for (const Leaf& leaf : leaves) {
      if (leaf.generation < s.min_transid) continue;
      for (const auto& [key, data] : leaf.items)
        if (!(key < s.min) && !(s.max < key) && !visit({key, leaf.generation, data})) return Status::Ok();
    }
    return Status::Ok();
  }
};

// Each item visited, as (inode, type, its data's first byte).
using Seen = std::vector<std::tuple<uint64_t, uint8_t, char>>;

Seen VisitAll(const ChangedLeaves& c, uint64_t first, uint64_t last) {
  Seen seen;
  EXPECT_TRUE(c.Visit(first, last, [&](const BtrfsItem& it) {
                 seen.emplace_back(it.key.objectid, it.key.type, it.data[0]);
                 return true;
               }).ok());
  return seen;
}

Seen Expected(uint64_t first, uint64_t last, char skip) {
  Seen want;
  for (uint64_t ino = first; ino <= last; ++ino) {
    const int l = int((ino - 256) / 4);
    if ('a' + l == skip) continue;
    want.emplace_back(ino, kBtrfsInodeItem, char('a' + l));
    want.emplace_back(ino, kBtrfsExtentData, char('A' + l));
  }
  return want;
}

TEST(ChangedLeaves, TheItemsOfTheLeavesWrittenSinceInKeyOrderFromTheDevice) {
  FakeDevice sys;
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->size(), 3u);  // the leaf of generation 40 is older
  sys.reads.clear();
  EXPECT_EQ(VisitAll(**c, kBtrfsFirstInode, kBtrfsLastInode), Expected(256, 271, 'b'));
  EXPECT_TRUE(sys.subvolume_searches.empty());
  // Slots 5, 6 and 7 lie together: one request.
  ASSERT_EQ(sys.reads.size(), 1u);
  EXPECT_EQ(sys.reads[0], std::make_pair(FakeDevice::Physical(5), uint64_t(3 * kNode)));
  EXPECT_EQ(stats.leaves, 3u);
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.searched, 0u);
}

TEST(ChangedLeaves, ARangeOfInodesAlone) {
  FakeDevice sys;
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, 258, 265, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->size(), 2u);  // 256-259 and 264-267
  EXPECT_EQ(VisitAll(**c, 258, 265), Expected(258, 265, 'b'));
  EXPECT_EQ(VisitAll(**c, 265, 265), Expected(265, 265, 0));
  EXPECT_TRUE(VisitAll(**c, 261, 262).empty());  // only in the older leaf
}

TEST(ChangedLeaves, LeavesApartAreReadApartAndGapsUpTo64KiBReadThrough) {
  FakeDevice sys;
  sys.leaves[0].slot = 12;  // 5 blocks (80 KiB) past slot 6: a request of its own
  sys.leaves[2].slot = 2;   // 3 blocks (48 KiB) before slot 6: read through
  sys.Write();
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok());
  sys.reads.clear();
  EXPECT_EQ(VisitAll(**c, kBtrfsFirstInode, kBtrfsLastInode), Expected(256, 271, 'b'));
  ASSERT_EQ(sys.reads.size(), 2u);
  EXPECT_EQ(sys.reads[0], std::make_pair(FakeDevice::Physical(2), uint64_t(5 * kNode)));
  EXPECT_EQ(sys.reads[1], std::make_pair(FakeDevice::Physical(12), uint64_t(kNode)));
}

// A leaf freed and written again after the layout (or torn by a write under way): from
// its first key on, the kernel's search, which has the live tree.
TEST(ChangedLeaves, ALeafNotTheOneLaidOutHandsTheRestToTheSearch) {
  for (const char* how : {"written again", "torn"}) {
    FakeDevice sys;
    ChangedLeavesStats stats;
    auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
    ASSERT_TRUE(c.ok());
    std::string& third = sys.disk[FakeDevice::Physical(5)];
    if (std::string(how) == "torn") {
      third[kNode - 10] ^= 1;  // an item's byte, under the checksum
    } else {
      FakeDevice::Leaf newer = sys.leaves[2];
      newer.generation = 60;
      third = sys.LeafBlock(newer);
    }
    EXPECT_EQ(VisitAll(**c, 257, 270), Expected(257, 270, 'b')) << how;
    ASSERT_EQ(sys.subvolume_searches.size(), 1u) << how;
    EXPECT_EQ(sys.subvolume_searches[0].min, (BtrfsKey{264, kBtrfsInodeItem, 0})) << how;
    EXPECT_EQ(sys.subvolume_searches[0].max.objectid, 270u) << how;
    EXPECT_EQ(sys.subvolume_searches[0].min_transid, 45u) << how;
    EXPECT_EQ(stats.leaves, 1u) << how;
    EXPECT_EQ(stats.searched, 1u) << how;
  }
}

TEST(ChangedLeaves, AReadThatFailsHandsTheRestToTheSearch) {
  FakeDevice sys;
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok());
  sys.disk.clear();  // every block reads as zeros
  EXPECT_EQ(VisitAll(**c, kBtrfsFirstInode, kBtrfsLastInode), Expected(256, 271, 'b'));
  ASSERT_EQ(sys.subvolume_searches.size(), 1u);
  EXPECT_EQ(sys.subvolume_searches[0].min, (BtrfsKey{256, kBtrfsInodeItem, 0}));  // the first leaf's key
}

// 100 leaves of 16 KiB: two windows of 1 MiB. A leaf of the second that fails its check
// hands the rest to the search; the first window's items are not met again.
TEST(ChangedLeaves, WindowAfterWindowAndAFailureInALaterOne) {
  FakeDevice sys;
  sys.Many(100);
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ((*c)->size(), 100u);
  sys.reads.clear();
  std::vector<uint64_t> inodes;
  auto visit = [&](const BtrfsItem& it) {
    if (it.key.type == kBtrfsInodeItem) inodes.push_back(it.key.objectid);
    return true;
  };
  ASSERT_TRUE((*c)->Visit(kBtrfsFirstInode, kBtrfsLastInode, visit).ok());
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 100; ++i) want.push_back(256 + i);
  EXPECT_EQ(inodes, want);
  ASSERT_EQ(sys.reads.size(), 2u);
  EXPECT_EQ(sys.reads[0], std::make_pair(FakeDevice::Physical(1), uint64_t(64 * kNode)));
  EXPECT_EQ(sys.reads[1], std::make_pair(FakeDevice::Physical(65), uint64_t(36 * kNode)));
  sys.disk[FakeDevice::Physical(1 + 80)][200] ^= 1;  // a byte of leaf 80, under its checksum
  inodes.clear();
  ASSERT_TRUE((*c)->Visit(kBtrfsFirstInode, kBtrfsLastInode, visit).ok());
  EXPECT_EQ(inodes, want);
  ASSERT_EQ(sys.subvolume_searches.size(), 1u);
  EXPECT_EQ(sys.subvolume_searches[0].min, (BtrfsKey{256 + 80, kBtrfsInodeItem, 0}));
  EXPECT_EQ(stats.leaves, 100u + 80u);
}

TEST(ChangedLeaves, TheVisitorStopsIt) {
  FakeDevice sys;
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok());
  int n = 0;
  EXPECT_TRUE((*c)->Visit(kBtrfsFirstInode, kBtrfsLastInode, [&](const BtrfsItem&) { return ++n < 3; }).ok());
  EXPECT_EQ(n, 3);
}

// An inode whose items run from a leaf written since into an older one beside it, or
// from an older one into it: that inode's items in the older leaf come too, in key
// order, and no other item of it. An older leaf that begins with an inode item shares
// none with the leaf before it, and is not read.
TEST(ChangedLeaves, AnInodesItemsInAnOlderLeafBesideOneWrittenSince) {
  FakeDevice sys;
  auto leaf = [](uint64_t slot, uint64_t gen, std::vector<BtrfsKey> keys, char mark) {
    FakeDevice::Leaf l{slot, gen, {}};
    for (const BtrfsKey& k : keys) l.items[k] = std::string(40, mark);
    return l;
  };
  const uint8_t I = kBtrfsInodeItem, X = kBtrfsExtentData;
  sys.leaves = {leaf(7, 40, {{256, I, 0}, {256, X, 0}, {257, I, 0}, {257, X, 0}}, 'p'),
                leaf(3, 50, {{257, X, 4096}, {258, I, 0}, {258, X, 0}, {259, I, 0}}, 'n'),
                leaf(5, 40, {{259, X, 0}, {259, X, 8192}, {260, I, 0}}, 'f'),
                leaf(9, 40, {{261, I, 0}, {261, X, 0}}, 'o')};
  sys.Write();
  ChangedLeavesStats stats;
  auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->size(), 3u);  // not the last: it begins with inode 261's inode item
  const Seen want = {{257, I, 'p'}, {257, X, 'p'}, {257, X, 'n'}, {258, I, 'n'}, {258, X, 'n'},
                     {259, I, 'n'}, {259, X, 'f'}, {259, X, 'f'}};
  EXPECT_EQ(VisitAll(**c, kBtrfsFirstInode, kBtrfsLastInode), want);
  EXPECT_EQ(VisitAll(**c, 259, 261), Seen(want.begin() + 5, want.end()));
  EXPECT_TRUE(sys.subvolume_searches.empty());
  // The older leaf after it torn: from there on, the search's items alone.
  sys.disk[FakeDevice::Physical(5)][200] ^= 1;
  EXPECT_EQ(VisitAll(**c, kBtrfsFirstInode, kBtrfsLastInode), Seen(want.begin(), want.begin() + 6));
  EXPECT_EQ(sys.subvolume_searches.size(), 1u);
  // An older leaf in no chunk mapped: left out, the others read all the same.
  sys.leaves[2].slot = 8000;  // past the 64 MiB chunk
  sys.Write();
  auto d = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)->size(), 2u);
  EXPECT_EQ(VisitAll(**d, kBtrfsFirstInode, kBtrfsLastInode), Seen(want.begin(), want.begin() + 6));
  // Nor one whose shared inode lies outside the range laid out.
  auto e = ChangedLeaves::Lay(sys, -1, 45, 258, 258, &stats);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->size(), 1u);
}

TEST(ChangedLeaves, NotLaidOutWhereTheyCannotBeReadFromTheDevice) {
  {
    FakeDevice sys;  // SHA-256: not computed here
    sys.csum_type = kBtrfsCsumSha256;
    ChangedLeavesStats stats;
    EXPECT_FALSE(ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats).ok());
  }
  {
    FakeDevice sys;  // the root node's keys out of order: its leaves would overlap
    std::swap(sys.leaves[1], sys.leaves[2]);
    sys.Write();
    ChangedLeavesStats stats;
    EXPECT_FALSE(ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats).ok());
  }
  {
    FakeDevice sys;  // the root node on the device is not the one the root item names
    sys.disk[FakeDevice::Physical(0)][90] ^= 1;
    ChangedLeavesStats stats;
    auto c = ChangedLeaves::Lay(sys, -1, 45, kBtrfsFirstInode, kBtrfsLastInode, &stats);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("checksum"), std::string::npos) << c.status().message();
  }
}

TEST(ChangedLeaves, LeafItemsOutsideTheirBlockOrOutOfOrderDoNotDecode) {
  FakeDevice sys;
  std::string leaf = sys.LeafBlock(sys.leaves[0]);
  std::vector<BtrfsItem> items;
  ASSERT_TRUE(DecodeLeafItems(leaf, 50, &items));
  EXPECT_EQ(items.size(), 8u);
  EXPECT_EQ(items[0].transid, 50u);
  std::string past = leaf;
  Put<uint32_t>(&past, 101 + 21, kNode);  // the first item's size: past the block's end
  EXPECT_FALSE(DecodeLeafItems(past, 50, &items));
  std::string among = leaf;
  Put<uint32_t>(&among, 101 + 17, 25);  // its data among the item headers
  EXPECT_FALSE(DecodeLeafItems(among, 50, &items));
  std::string order = leaf;
  Put<uint64_t>(&order, 101, 300);  // the first key past the second
  EXPECT_FALSE(DecodeLeafItems(order, 50, &items));
}

}  // namespace
}  // namespace oans
