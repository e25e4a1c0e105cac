// Files mapped from their btrfs items (lib/btrfs/tree_map.h), against a fake subvolume
// tree of raw items: the maps FIEMAP would give, the flags FS_IOC_GETFLAGS would.
#include "lib/btrfs/tree_map.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <map>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint32_t kNotAligned = 0x100;

class FakeTree : public test::ForwardingSys {
 public:
  std::map<BtrfsKey, std::string> items;
  int searches = 0;

  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    EXPECT_EQ(s.tree_id, 0u);
    searches++;
    for (auto it = items.lower_bound(s.min); it != items.end() && !(s.max < it->first); ++it)
      if (!visit({it->first, 1, it->second})) break;
    return Status::Ok();
  }

  void Inode(uint64_t ino, uint64_t size, uint64_t flags = 0, uint32_t nlink = 1) {
    btrfs_inode_item in;
    std::memset(&in, 0, sizeof in);
    in.size = htole64(size);
    in.nlink = htole32(nlink);
    in.mode = htole32(0100644);
    in.flags = htole64(flags);
    in.mtime.sec = htole64(1000 + ino);
    in.ctime.sec = htole64(2000 + ino);
    items[{ino, kBtrfsInodeItem, 0}] = std::string(reinterpret_cast<char*>(&in), sizeof in);
    items[{ino, kBtrfsInodeRef, 256}] = std::string(14, 'r');
  }
  void Extent(uint64_t ino, uint64_t at, uint8_t type, uint64_t disk, uint64_t disk_len, uint64_t offset,
              uint64_t len, uint8_t compression = 0) {
    btrfs_file_extent_item x;
    std::memset(&x, 0, sizeof x);
    x.type = type;
    x.compression = compression;
    x.disk_bytenr = htole64(disk);
    x.disk_num_bytes = htole64(disk_len);
    x.offset = htole64(offset);
    x.num_bytes = htole64(len);
    x.ram_bytes = htole64(disk_len);
    items[{ino, kBtrfsExtentData, at}] = std::string(reinterpret_cast<char*>(&x), sizeof x);
  }
  void Inline(uint64_t ino, const std::string& data, uint8_t compression = 0, uint64_t ram = 0) {
    btrfs_file_extent_item x;
    std::memset(&x, 0, sizeof x);
    x.type = BTRFS_FILE_EXTENT_INLINE;
    x.compression = compression;
    x.ram_bytes = htole64(ram ? ram : data.size());
    const size_t fixed = offsetof(btrfs_file_extent_item, disk_bytenr);
    items[{ino, kBtrfsExtentData, 0}] = std::string(reinterpret_cast<char*>(&x), fixed) + data;
  }
};

bool Same(const std::vector<FiemapExtent>& a, const std::vector<FiemapExtent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].logical != b[i].logical || a[i].physical != b[i].physical || a[i].length != b[i].length ||
        a[i].flags != b[i].flags)
      return false;
  return true;
}

// Items contiguous in the file and on disk are one extent, as FIEMAP merges them; a
// part of a disk extent starts at its offset; an explicit hole is left out; the last
// extent is LAST; the identity comes from the inode item.
TEST(TreeMap, RegularExtentsAsFiemapHasThem) {
  FakeTree t;
  t.Inode(300, 5 * 65536);
  t.Extent(300, 0, BTRFS_FILE_EXTENT_REG, 1 << 20, 65536, 0, 65536);
  t.Extent(300, 65536, BTRFS_FILE_EXTENT_REG, (1 << 20) + 65536, 65536, 0, 65536);  // contiguous: merged
  t.Extent(300, 131072, BTRFS_FILE_EXTENT_REG, 0, 0, 0, 65536);                      // a hole
  t.Extent(300, 196608, BTRFS_FILE_EXTENT_REG, 8 << 20, 262144, 4096, 131072);      // part of an extent
  t.Inode(301, 100);  // the next inode's items are not this file's
  t.Extent(301, 0, BTRFS_FILE_EXTENT_REG, 9 << 20, 4096, 0, 4096);
  TreeMap m;
  auto r = MapFromTree(t, -1, 300, &m);
  ASSERT_OK(r.status());
  ASSERT_TRUE(*r);
  EXPECT_TRUE(Same(m.extents, {{0, 1 << 20, 131072, 0}, {196608, (8 << 20) + 4096, 131072, kExtentLast}}));
  EXPECT_EQ(m.ino, 300u);
  const FileStat st = m.Stat(42);
  EXPECT_EQ(st.dev, 42u);
  EXPECT_EQ(st.ino, 300u);
  EXPECT_EQ(st.size, 5u * 65536);
  EXPECT_EQ(st.mtime_ns, 1300 * int64_t(1000000000));
  EXPECT_EQ(st.ctime_ns, 2300 * int64_t(1000000000));
  EXPECT_EQ(st.nlink, 1u);
  EXPECT_TRUE(m.inline_data.empty());
}

// A compressed extent is at its disk address whatever its offset, ENCODED, and not merged
// with a plain neighbour; preallocated is UNWRITTEN; flags as FS_IOC_GETFLAGS has them.
TEST(TreeMap, CompressedPreallocatedAndFlags) {
  FakeTree t;
  t.Inode(300, 3 * 131072, /*NODATASUM|NODATACOW|COMPRESS*/ 1 | 2 | (1 << 11));
  t.Extent(300, 0, BTRFS_FILE_EXTENT_REG, 1 << 20, 16384, 65536, 131072, 3 /* zstd */);
  t.Extent(300, 131072, BTRFS_FILE_EXTENT_REG, (1 << 20) + 131072, 131072, 0, 131072);
  t.Extent(300, 262144, BTRFS_FILE_EXTENT_PREALLOC, 4 << 20, 131072, 0, 131072);
  TreeMap m;
  ASSERT_TRUE(*MapFromTree(t, -1, 300, &m));
  EXPECT_TRUE(Same(m.extents, {{0, 1 << 20, 131072, kExtentEncoded},
                               {131072, (1 << 20) + 131072, 131072, 0},
                               {262144, 4 << 20, 131072, kExtentUnwritten | kExtentLast}}));
  EXPECT_EQ(m.inode_flags, 0x00800000u | 0x4u);  // FS_NOCOW_FL, FS_COMPR_FL
  EXPECT_EQ(FsFlagsOfBtrfs((1 << 3) | (1 << 11)), 0x400u);  // NOCOMPRESS wins
  EXPECT_EQ(FsFlagsOfBtrfs((1 << 6) | (1 << 7) | (uint64_t(1) << 32)), 0x10u | 0x20u | 0x00100000u);
}

// An uncompressed inline extent that is the whole file gives its bytes; a compressed
// one, or one shorter than the file, does not. The extent is rounded up to a sector.
TEST(TreeMap, InlineData) {
  FakeTree t;
  t.Inode(300, 5);
  t.Inline(300, "hello");
  t.Inode(301, 3000);
  t.Inline(301, std::string(40, 'z'), 1 /* zlib */, 3000);
  t.Inode(302, 8000);  // inline data, then a hole to the size
  t.Inline(302, std::string(100, 'a'));
  TreeMap m;
  ASSERT_TRUE(*MapFromTree(t, -1, 300, &m));
  EXPECT_EQ(m.inline_data, "hello");
  EXPECT_TRUE(Same(m.extents, {{0, 0, 4096, kExtentInline | kNotAligned | kExtentLast}}));
  ASSERT_TRUE(*MapFromTree(t, -1, 301, &m));
  EXPECT_TRUE(m.inline_data.empty());
  EXPECT_TRUE(Same(m.extents, {{0, 0, 4096, kExtentInline | kNotAligned | kExtentEncoded | kExtentLast}}));
  ASSERT_TRUE(*MapFromTree(t, -1, 302, &m));
  EXPECT_TRUE(m.inline_data.empty());
}

// An explicit hole after the last extent (a filesystem made without no-holes): the last
// extent is still LAST, as FIEMAP has it.
TEST(TreeMap, TrailingExplicitHole) {
  FakeTree t;
  t.Inode(300, 1 << 20);
  t.Extent(300, 0, BTRFS_FILE_EXTENT_REG, 1 << 20, 65536, 0, 65536);
  t.Extent(300, 65536, BTRFS_FILE_EXTENT_REG, 0, 0, 0, (1 << 20) - 65536);
  TreeMap m;
  ASSERT_TRUE(*MapFromTree(t, -1, 300, &m));
  EXPECT_TRUE(Same(m.extents, {{0, 1 << 20, 65536, kExtentLast}}));
}

// No inode item, or an item too short to decode: no map.
TEST(TreeMap, MissingOrDamagedItems) {
  FakeTree t;
  TreeMap m;
  EXPECT_FALSE(*MapFromTree(t, -1, 300, &m));
  t.Inode(300, 4096);
  t.items[{300, kBtrfsExtentData, 0}] = std::string(10, 'x');
  EXPECT_FALSE(*MapFromTree(t, -1, 300, &m));
}

// Many inodes in one search: the items of inodes not asked for (a subdirectory, another
// directory's file) are passed over; an inode without items is left out; past the item
// budget the search stops and an inode not yet complete is left out, not cut.
TEST(TreeMap, ManyInodesInOneSearch) {
  FakeTree t;
  for (uint64_t ino = 300; ino < 310; ++ino) {
    if (ino == 305) continue;  // vanished
    t.Inode(ino, 8192);
    t.Extent(ino, 0, BTRFS_FILE_EXTENT_REG, ino << 20, 4096, 0, 4096);
    t.Extent(ino, 4096, BTRFS_FILE_EXTENT_REG, (ino << 20) + 65536, 4096, 0, 4096);
  }
  for (uint64_t i = 0; i < 50; ++i) t.items[{303, kBtrfsDirIndex, i}] = "entry";  // 303 as a directory
  std::vector<TreeMap> out;
  ASSERT_OK(MapManyFromTree(t, -1, {300, 302, 305, 306, 309}, 1000, &out));
  EXPECT_EQ(t.searches, 1);
  ASSERT_EQ(out.size(), 4u);
  const uint64_t want[] = {300, 302, 306, 309};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].ino, want[i]);
    EXPECT_TRUE(Same(out[i].extents, {{0, want[i] << 20, 4096, 0}, {4096, (want[i] << 20) + 65536, 4096, kExtentLast}}));
  }
  // 300's four items, 301's four, 302's inode item and ref: 302 is not complete.
  ASSERT_OK(MapManyFromTree(t, -1, {300, 302}, 10, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ino, 300u);
}

// A batch's regular files in one search; each map is taken once (a second name of the
// same inode searches again, as does another directory's descriptor).
TEST(TreeMap, BatchMapsTakenOnce) {
  FakeTree t;
  for (uint64_t ino = 300; ino < 304; ++ino) {
    t.Inode(ino, 4096);
    t.Extent(ino, 0, BTRFS_FILE_EXTENT_REG, ino << 20, 4096, 0, 4096);
  }
  std::vector<DirEntry> batch = {{".", 256, DT_DIR}, {"a", 300, DT_REG}, {"b", 301, DT_REG},
                                 {"d", 302, DT_DIR}, {"c", 303, DT_REG}, {"far", 9000, DT_REG}};
  BatchMaps b;
  b.Map(t, 7, batch);
  EXPECT_EQ(t.searches, 1);
  TreeMap m;
  ASSERT_TRUE(b.Take(t, 7, 301, &m));
  EXPECT_EQ(m.ino, 301u);
  EXPECT_EQ(t.searches, 1);
  ASSERT_TRUE(b.Take(t, 7, 301, &m));  // taken already: searched
  EXPECT_EQ(t.searches, 2);
  ASSERT_TRUE(b.Take(t, 8, 303, &m));  // another directory: searched
  EXPECT_EQ(t.searches, 3);
  EXPECT_FALSE(b.Take(t, 7, 9000, &m));  // not found in its own search either
  b.Clear();
  ASSERT_TRUE(b.Take(t, 7, 300, &m));
  EXPECT_EQ(t.searches, 5);
}

}  // namespace
}  // namespace oans
