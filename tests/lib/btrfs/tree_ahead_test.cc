// The tree read-ahead of spinning disks (lib/btrfs/tree_ahead.h): trees laid out from
// their internal nodes and read leaf by leaf in disk order; key order when they cannot
// be; where --memory stops it.
#include "lib/btrfs/tree_ahead.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "lib/base/crc32c.h"
#include "lib/btrfs/search.h"
#include "tests/lib/btrfs/fake_device.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint64_t kSubvol = 257;
constexpr uint32_t kNode = 16384;
constexpr uint64_t kChunkLogical = 1ull << 30, kChunkPhysical = 100ull << 20;
constexpr int kDeviceFd = 977;

using test::Put;

// A filesystem of two trees: the subvolume's (ten files, two items each) and the checksum
// tree (two items), each with a root node over leaves laid out on "disk" in an order
// unlike their key order, one chunk mapping the metadata, one device.
class FakeFs : public test::FakeBtrfsDevice {
 public:
  std::map<uint64_t, std::map<BtrfsKey, std::string>> trees;
  std::map<uint64_t, std::string> disk;  // physical offset -> block
  std::vector<BtrfsSearch> searches;  // under mu: readers search at once
  std::mutex mu;
  // A leaf's search waits (up to wait_ms) until this many are under way at once.
  size_t wait_for = 0;
  int wait_ms = 200;
  size_t in_flight = 0, most_in_flight = 0;
  std::condition_variable cv;
  BtrfsKey fail_at{~uint64_t(0), 0, 0};  // a leaf whose search fails (EIO)
  uint64_t chunk_type = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP;
  bool stale = false;  // the root node on disk is of another generation than its root item says
  bool moved = false;  // the subvolume's root node on disk names another address than its own
  bool foreign = false;  // the nodes on disk are of another filesystem
  std::map<uint64_t, uint64_t> leaf_generation;  // by logical address; 42 when not here

  // Leaves of the subvolume tree: first keys, and the logical address of each.
  std::vector<std::pair<BtrfsKey, uint64_t>> fs_leaves = {
      {{256, kBtrfsInodeItem, 0}, kChunkLogical + 5 * kNode},
      {{259, kBtrfsInodeItem, 0}, kChunkLogical + 2 * kNode},
      {{262, kBtrfsInodeItem, 0}, kChunkLogical + 9 * kNode},
  };
  std::vector<std::pair<BtrfsKey, uint64_t>> csum_leaves = {
      {{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 1 << 20}, kChunkLogical + 7 * kNode},
      {{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 8 << 20}, kChunkLogical + 3 * kNode},
  };

  FakeFs() : FakeBtrfsDevice(kSubvol, kNode, kDeviceFd) {
    for (uint64_t ino = 256; ino < 266; ++ino) {
      trees[kSubvol][{ino, kBtrfsInodeItem, 0}] = std::string(160, 'i');
      trees[kSubvol][{ino, kBtrfsExtentData, 0}] = std::string(53, 'x');
    }
    trees[kBtrfsCsumTree][{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 1 << 20}] = std::string(400, 'c');
    trees[kBtrfsCsumTree][{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 8 << 20}] = std::string(400, 'c');
  }

  // Writes the root nodes, root items and chunk item; call after changing the above.
  void Lay(uint64_t first = kSubvol, uint64_t second = kBtrfsCsumTree) {
    disk.clear();
    trees[kBtrfsRootTree].clear();
    trees[kBtrfsChunkTree].clear();
    trees[first] = trees[kSubvol];
    trees[second] = trees[kBtrfsCsumTree];
    Root(first, kChunkLogical + 1 * kNode, fs_leaves);
    Root(second, kChunkLogical + 4 * kNode, csum_leaves);
    trees[kBtrfsChunkTree][{kBtrfsFirstChunkTreeObjectid, kBtrfsChunkItem, kChunkLogical}] =
        test::ChunkItem(chunk_type, kChunkPhysical, 64ull << 20);
  }

  void Root(uint64_t tree, uint64_t bytenr, const std::vector<std::pair<BtrfsKey, uint64_t>>& leaves) {
    std::string node(kNode, '\0');
    for (int i = 0; i < 16; ++i) node[32 + i] = foreign ? 0x22 : 0x11;
    Put<uint64_t>(&node, 48, moved && tree == kSubvol ? bytenr + kNode : bytenr);
    Put<uint64_t>(&node, 80, stale ? 41 : 42);
    Put<uint64_t>(&node, 88, tree);
    Put<uint32_t>(&node, 96, uint32_t(leaves.size()));
    node[100] = 1;  // level
    for (size_t i = 0; i < leaves.size(); ++i) {
      const size_t at = 101 + i * 33;
      Put<uint64_t>(&node, at, leaves[i].first.objectid);
      node[at + 8] = char(leaves[i].first.type);
      Put<uint64_t>(&node, at + 9, leaves[i].first.offset);
      Put<uint64_t>(&node, at + 17, leaves[i].second);
      auto gen = leaf_generation.find(leaves[i].second);
      Put<uint64_t>(&node, at + 25, gen == leaf_generation.end() ? 42 : gen->second);
    }
    Put<uint32_t>(&node, 0, Crc32c(0, node.data() + 32, node.size() - 32));  // the filesystem's kind: crc32c
    disk[kChunkPhysical + (bytenr - kChunkLogical)] = node;
    trees[kBtrfsRootTree][{tree, kBtrfsRootItem, 0}] = test::RootItem(bytenr, 42, (leaves.size() + 1) * kNode, 1);
  }

  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    EXPECT_EQ(fd, kDeviceFd);
    auto it = disk.find(offset);
    if (it == disk.end()) return Status::Io("read", 5);
    const size_t n = std::min(len, it->second.size());
    std::memcpy(buf, it->second.data(), n);
    return n;
  }
  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    std::unique_lock<std::mutex> hold(mu);
    searches.push_back(s);
    if (s.max_items == 1 && s.tree_id == kSubvol) {
      most_in_flight = std::max(most_in_flight, ++in_flight);
      cv.notify_all();
      cv.wait_for(hold, std::chrono::milliseconds(wait_ms), [&] { return in_flight >= wait_for; });
      --in_flight;
      if (s.min == fail_at) return Status::Io("tree search", EIO);
    }
    const auto& items = trees[s.tree_id];
    uint32_t n = 0;
    for (auto it = items.lower_bound(s.min); it != items.end() && !(s.max < it->first); ++it) {
      if (!visit({it->first, 1, it->second})) break;
      if (s.max_items && ++n == s.max_items) break;
    }
    return Status::Ok();
  }

  // The searches of the trees read ahead (not of the root and chunk trees), as
  // (tree, first key, max_items).
  std::vector<std::tuple<uint64_t, BtrfsKey, uint32_t>> Reads() const {
    std::vector<std::tuple<uint64_t, BtrfsKey, uint32_t>> out;
    for (const auto& s : searches)
      if (s.tree_id != kBtrfsRootTree && s.tree_id != kBtrfsChunkTree) out.emplace_back(s.tree_id, s.min, s.max_items);
    return out;
  }
};

using Read = std::tuple<uint64_t, BtrfsKey, uint32_t>;

TEST(TreeAhead, ReadsEachTreesLeavesInDiskOrderOneSearchEach) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  const std::vector<Read> want = {
      // One pass: the subvolume's leaves (2, 5 and 9 nodes into the chunk) among the
      // checksums' (3 and 7), each tree's search with its own range.
      {kSubvol, {259, kBtrfsInodeItem, 0}, 1},
      {kBtrfsCsumTree, {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 8 << 20}, 1},
      {kSubvol, {256, kBtrfsInodeItem, 0}, 1},
      {kBtrfsCsumTree, {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 1 << 20}, 1},
      {kSubvol, {262, kBtrfsInodeItem, 0}, 1},
  };
  EXPECT_EQ(sys.Reads(), want);
  EXPECT_EQ(stats.leaves, 5u);
  EXPECT_EQ(stats.bytes, 5u * kNode);
  EXPECT_TRUE(stats.on_disk);
  EXPECT_FALSE(stats.cut_short);
}

// Every item of the range, in one search per tree.
void ExpectKeyOrder(const FakeFs& sys, const TreeAheadStats& stats) {
  const auto reads = sys.Reads();
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(std::get<0>(reads[0]), kSubvol);
  EXPECT_EQ(std::get<2>(reads[0]), 0u);
  EXPECT_EQ(std::get<0>(reads[1]), kBtrfsCsumTree);
  EXPECT_EQ(stats.leaves, 0u);
  EXPECT_EQ(stats.bytes, 10u * (160 + 53) + 2 * 400);
}

TEST(TreeAhead, AStaleNodeOnDiskMeansKeyOrder) {
  FakeFs sys;
  sys.stale = true;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  ExpectKeyOrder(sys, stats);
}

TEST(TreeAhead, ANodeThatFailsItsChecksumMeansKeyOrderForItsTree) {
  FakeFs sys;
  sys.Lay();
  sys.disk[kChunkPhysical + kNode][200] ^= 1;  // the subvolume's root node: a pointer's byte
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  const auto reads = sys.Reads();
  // The checksums' two leaves on disk, then the subvolume in key order.
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(std::get<0>(reads[0]), kBtrfsCsumTree);
  EXPECT_EQ(std::get<0>(reads[2]), kSubvol);
  EXPECT_EQ(std::get<2>(reads[2]), 0u);
  EXPECT_EQ(stats.leaves, 2u);
}

TEST(TreeAhead, ABlockAtAnotherAddressMeansKeyOrderForItsTree) {
  FakeFs sys;
  sys.moved = true;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  const auto reads = sys.Reads();
  // The checksums' two leaves on disk, then the subvolume in key order.
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(std::get<0>(reads[0]), kBtrfsCsumTree);
  EXPECT_EQ(std::get<2>(reads[0]), 1u);
  EXPECT_EQ(std::get<0>(reads[2]), kSubvol);
  EXPECT_EQ(std::get<2>(reads[2]), 0u);
  EXPECT_EQ(stats.leaves, 2u);
}

TEST(TreeAhead, BlocksOfAnotherFilesystemMeanKeyOrder) {
  FakeFs sys;
  sys.foreign = true;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  ExpectKeyOrder(sys, stats);
}

TEST(TreeAhead, ADeviceThatCannotBeOpenedMeansKeyOrder) {
  FakeFs sys;
  sys.no_device = true;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  ExpectKeyOrder(sys, stats);
}

TEST(TreeAhead, TheChecksumTreeIsReadOncePerFilesystem) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  sys.searches.clear();
  ASSERT_TRUE(ReadTreesAhead(sys, 4, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());  // another subvolume's root
  for (const auto& r : sys.Reads()) EXPECT_EQ(std::get<0>(r), kSubvol);
  EXPECT_EQ(stats.leaves, 8u);
}

TEST(TreeAhead, AStopEndsItBetweenReads) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  int asked = 0;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, [&] { return ++asked > 2; }}, &stats).ok());
  EXPECT_LE(sys.Reads().size(), 1u);
  EXPECT_LE(stats.leaves, 1u);
  // Stopped, the blocks written since are not said to be read, even after a call that
  // read them all.
  FakeFs changes;
  changes.Lay();
  TreeAheadStats twice;
  ASSERT_TRUE(ReadTreesAhead(changes, 3, {TreesFor::kChanges, 1 << 30, {}, 1}, &twice).ok());
  EXPECT_EQ(twice.inodes_below, ~uint64_t(0));
  asked = 0;
  TreeAheadJob stopped{TreesFor::kChanges, 1 << 30, [&] { return ++asked > 2; }, 1};
  stopped.first_inode = 256;
  ASSERT_TRUE(ReadTreesAhead(changes, 3, stopped, &twice).ok());
  EXPECT_EQ(twice.inodes_below, 256u);
  EXPECT_FALSE(twice.whole);
}

TEST(TreeAhead, AMirroredProfileMeansKeyOrder) {
  FakeFs sys;
  sys.chunk_type = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1;  // mirrored: read from either copy
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  ExpectKeyOrder(sys, stats);
}

TEST(TreeAhead, ALeafOutsideEveryChunkMeansKeyOrder) {
  FakeFs sys;
  sys.fs_leaves[1].second = 5ull << 30;
  sys.csum_leaves[0].second = 7ull << 30;
  sys.Lay();
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1 << 30, {}}, &stats).ok());
  ExpectKeyOrder(sys, stats);
}

TEST(TreeAhead, StopsAtTheBudgetAndSaysSo) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  // The subvolume's tree (4 blocks) fits and is read in disk order; the checksum tree (3)
  // no longer does and is read in key order, its items within what is left.
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 5 * kNode, {}}, &stats).ok());
  EXPECT_FALSE(stats.cut_short);
  EXPECT_EQ(stats.leaves, 3u);
  EXPECT_EQ(stats.bytes, 3u * kNode + 800);
  stats = {};
  sys.searches.clear();
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kScan, 1000, {}}, &stats).ok());
  EXPECT_TRUE(stats.cut_short);
  EXPECT_EQ(stats.leaves, 0u);
  ASSERT_EQ(sys.Reads().size(), 1u);  // the checksum tree is not started
  EXPECT_EQ(stats.bytes, 1012u);      // 160 + 53 + ...: the ninth item passes 1000

  // A second root's call on a spent budget reads nothing.
  TreeAheadStats spent = stats;
  sys.searches.clear();
  ASSERT_TRUE(ReadTreesAhead(sys, 4, {TreesFor::kScan, 1000, {}}, &spent).ok());
  EXPECT_TRUE(sys.Reads().empty());
  EXPECT_EQ(spent.bytes, stats.bytes);
}

TEST(TreeAhead, ForApplyTheExtentAndFreeSpaceTreesInDiskOrder) {
  FakeFs sys;
  sys.csum_leaves[0].first = {1ull << 20, BTRFS_FREE_SPACE_INFO_KEY, 1 << 30};
  sys.csum_leaves[1].first = {9ull << 20, BTRFS_FREE_SPACE_EXTENT_KEY, 4096};
  sys.Lay(kBtrfsExtentTree, kBtrfsFreeSpaceTree);
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kApply, 1 << 30, {}}, &stats).ok());
  const std::vector<Read> want = {
      {kBtrfsExtentTree, {259, kBtrfsInodeItem, 0}, 1},
      {kBtrfsFreeSpaceTree, {9ull << 20, BTRFS_FREE_SPACE_EXTENT_KEY, 4096}, 1},
      {kBtrfsExtentTree, {256, kBtrfsInodeItem, 0}, 1},
      {kBtrfsFreeSpaceTree, {1ull << 20, BTRFS_FREE_SPACE_INFO_KEY, 1 << 30}, 1},
      {kBtrfsExtentTree, {262, kBtrfsInodeItem, 0}, 1},
  };
  EXPECT_EQ(sys.Reads(), want);
  EXPECT_EQ(stats.leaves, 5u);
}

TEST(TreeAhead, ForChangesTheSubvolumesLeavesWrittenSinceOnly) {
  FakeFs sys;
  sys.leaf_generation[kChunkLogical + 2 * kNode] = 30;  // written before: not read
  sys.leaf_generation[kChunkLogical + 9 * kNode] = 40;
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 1 << 30, {}};
  job.since = 40;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  const std::vector<Read> want = {
      {kSubvol, {256, kBtrfsInodeItem, 0}, 1},
      {kSubvol, {262, kBtrfsInodeItem, 0}, 1},
  };
  EXPECT_EQ(sys.Reads(), want);  // no checksum tree
  EXPECT_EQ(stats.leaves, 2u);

  // A root older than the generation: nothing was written since.
  FakeFs quiet;
  quiet.Lay();
  TreeAheadStats none;
  job.since = 43;
  ASSERT_TRUE(ReadTreesAhead(quiet, 3, job, &none).ok());
  EXPECT_TRUE(quiet.Reads().empty());
  EXPECT_EQ(none.leaves, 0u);
}

// On an SSD, several readers at once: each leaf read once, and the first error is
// the call's.
TEST(TreeAhead, ReadersSearchAtOnceEachLeafOnce) {
  FakeFs sys;
  sys.Lay();
  sys.wait_for = 2;
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 1 << 30, {}, 0, 4};
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_GE(sys.most_in_flight, 2u);
  auto reads = sys.Reads();
  std::sort(reads.begin(), reads.end());
  const std::vector<Read> want = {
      {kSubvol, {256, kBtrfsInodeItem, 0}, 1},
      {kSubvol, {259, kBtrfsInodeItem, 0}, 1},
      {kSubvol, {262, kBtrfsInodeItem, 0}, 1},
  };
  EXPECT_EQ(reads, want);
  EXPECT_EQ(stats.leaves, 3u);

  // One reader: one search at a time.
  FakeFs one;
  one.Lay();
  one.wait_for = 2;
  one.wait_ms = 20;
  job.readers = 1;
  ASSERT_TRUE(ReadTreesAhead(one, 3, job, &stats).ok());
  EXPECT_EQ(one.most_in_flight, 1u);

  FakeFs failing;
  failing.Lay();
  failing.fail_at = {259, kBtrfsInodeItem, 0};
  job.readers = 4;
  TreeAheadStats some;
  Status s = ReadTreesAhead(failing, 3, job, &some);
  EXPECT_EQ(s.errnum(), EIO) << s.message();
  EXPECT_LE(some.leaves, 2u);
}

// For the changes, the budget counts the blocks written since, not the whole tree: a
// tree larger than it has its changed leaves read, the first by place that fit.
TEST(TreeAhead, ForChangesTheBudgetCountsTheBlocksWrittenSince) {
  FakeFs sys;
  sys.leaf_generation[kChunkLogical + 9 * kNode] = 30;  // written before: not read
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 2 * kNode, {}, 40};  // the tree takes 4 blocks
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_EQ(sys.Reads(), (std::vector<Read>{{kSubvol, {259, kBtrfsInodeItem, 0}, 1}, {kSubvol, {256, kBtrfsInodeItem, 0}, 1}}));
  EXPECT_FALSE(stats.cut_short);
  FakeFs all;
  all.Lay();
  TreeAheadStats cut;
  ASSERT_TRUE(ReadTreesAhead(all, 3, job, &cut).ok());
  EXPECT_EQ(all.Reads(), (std::vector<Read>{{kSubvol, {259, kBtrfsInodeItem, 0}, 1}, {kSubvol, {256, kBtrfsInodeItem, 0}, 1}}));
  EXPECT_TRUE(cut.cut_short);
}

// Past the budget, the leaves of the lowest keys are read (not the first by place), and
// the number below which every inode's leaves were read is said.
TEST(TreeAhead, ForChangesACutKeepsTheLowestKeys) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, kNode, {}, 1};  // room for one leaf of three
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  // 259's leaf is first on disk; 256's holds the lowest keys.
  EXPECT_EQ(sys.Reads(), (std::vector<Read>{{kSubvol, {256, kBtrfsInodeItem, 0}, 1}}));
  EXPECT_TRUE(stats.cut_short);
  EXPECT_TRUE(stats.cut);
  EXPECT_EQ(stats.inodes_below, 259u);
  // A second root's call on the budget spent: cut too, none of its blocks read.
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_TRUE(stats.cut);
  EXPECT_EQ(stats.inodes_below, 0u);
  // Not cut: every number asked for.
  FakeFs all;
  all.Lay();
  TreeAheadStats whole;
  TreeAheadJob room{TreesFor::kChanges, 1 << 30, {}, 1};
  ASSERT_TRUE(ReadTreesAhead(all, 3, room, &whole).ok());
  EXPECT_EQ(whole.leaves, 3u);
  EXPECT_FALSE(whole.cut);
  EXPECT_EQ(whole.inodes_below, ~uint64_t(0));
}

// A range of inode numbers: only the leaves that may hold their items, each searched
// from where the range begins; the budget is the range's own.
TEST(TreeAhead, ForChangesARangeOfInodes) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 1 << 30, {}, 1};
  job.first_inode = 257;  // within the first leaf (256 to 258)
  job.end_inode = 262;    // the third leaf begins with 262: left out
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_EQ(sys.Reads(), (std::vector<Read>{{kSubvol, {259, kBtrfsInodeItem, 0}, 1}, {kSubvol, {257, kBtrfsInodeItem, 0}, 1}}));
  EXPECT_FALSE(stats.cut_short);
  EXPECT_EQ(stats.inodes_below, 262u);
  // From 259 up, cut to one leaf: 259's.
  FakeFs cut;
  cut.Lay();
  TreeAheadStats some;
  TreeAheadJob one{TreesFor::kChanges, kNode, {}, 1};
  one.first_inode = 259;
  ASSERT_TRUE(ReadTreesAhead(cut, 3, one, &some).ok());
  EXPECT_EQ(cut.Reads(), (std::vector<Read>{{kSubvol, {259, kBtrfsInodeItem, 0}, 1}}));
  EXPECT_TRUE(some.cut_short);
  EXPECT_EQ(some.inodes_below, 262u);
  // Nothing written since in the range: nothing read, and none said to be.
  FakeFs old;
  old.leaf_generation[kChunkLogical + 2 * kNode] = 30;
  old.Lay();
  TreeAheadStats none;
  TreeAheadJob since{TreesFor::kChanges, 1 << 30, {}, 40};
  since.first_inode = 259;
  since.end_inode = 262;
  ASSERT_TRUE(ReadTreesAhead(old, 3, since, &none).ok());
  EXPECT_TRUE(old.Reads().empty());
  EXPECT_EQ(none.inodes_below, 259u);
}

// Fewer bytes of leaves than `least`: none is read; as many: all are.
TEST(TreeAhead, TooFewLeavesAreNotReadAhead) {
  for (uint64_t leaves : {4, 3}) {
    FakeFs sys;
    sys.Lay();
    TreeAheadStats stats;
    TreeAheadJob job{TreesFor::kChanges, 1 << 30, {}, 0, 1, leaves * kNode};
    ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
    EXPECT_EQ(sys.Reads().size(), leaves == 4 ? 0u : 3u);
    EXPECT_EQ(stats.leaves, leaves == 4 ? 0u : 3u);
    EXPECT_EQ(stats.whole, leaves == 3);  // every block in memory only when read
  }
}

// A budget that cuts the list under the least worth reading: nothing is read ahead, and
// nothing is said to be cut short.
TEST(TreeAhead, ACutListUnderTheLeastIsNotCutShort) {
  FakeFs sys;
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 2 * kNode, {}, 1, 1, 3 * kNode};  // every block written since
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_TRUE(sys.Reads().empty());
  EXPECT_EQ(stats.leaves, 0u);
  EXPECT_FALSE(stats.cut_short);
  EXPECT_FALSE(stats.whole);
  // With room for the least, the same budget cuts what it reads short.
  FakeFs again;
  again.Lay();
  TreeAheadStats read;
  TreeAheadJob cut{TreesFor::kChanges, 2 * kNode, {}, 1, 1, 2 * kNode};
  ASSERT_TRUE(ReadTreesAhead(again, 3, cut, &read).ok());
  EXPECT_EQ(read.leaves, 2u);
  EXPECT_TRUE(read.cut_short);
  EXPECT_FALSE(read.whole);
}

TEST(TreeAhead, ForChangesNothingInKeyOrder) {
  FakeFs sys;
  sys.chunk_type = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID0;
  sys.Lay();
  TreeAheadStats stats;
  TreeAheadJob job{TreesFor::kChanges, 1 << 30, {}};
  job.since = 40;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, job, &stats).ok());
  EXPECT_TRUE(sys.Reads().empty());
}

TEST(TreeAhead, ForApplyNothingInKeyOrder) {
  FakeFs sys;
  sys.chunk_type = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID0;
  sys.Lay(kBtrfsExtentTree, kBtrfsFreeSpaceTree);
  TreeAheadStats stats;
  ASSERT_TRUE(ReadTreesAhead(sys, 3, {TreesFor::kApply, 1 << 30, {}}, &stats).ok());
  EXPECT_TRUE(sys.Reads().empty());
  EXPECT_EQ(stats.bytes, 0u);
}

TEST(TreeAhead, NodesAreDecodedWithTheirKeyPointers) {
  FakeFs sys;
  sys.Lay();
  const std::string& block = sys.disk.begin()->second;
  BtrfsNode node;
  ASSERT_TRUE(DecodeNode(block, &node));
  EXPECT_EQ(node.level, 1);
  EXPECT_EQ(node.generation, 42u);
  ASSERT_EQ(node.ptrs.size(), 3u);
  EXPECT_EQ(node.ptrs[1].key, (BtrfsKey{259, kBtrfsInodeItem, 0}));
  EXPECT_EQ(node.ptrs[1].bytenr, kChunkLogical + 2 * kNode);
  // A node claiming more pointers than it holds is refused.
  EXPECT_FALSE(DecodeNode(block.substr(0, 101 + 2 * 33), &node));
  EXPECT_FALSE(DecodeNode(block.substr(0, 100), &node));
}

}  // namespace
}  // namespace oans
