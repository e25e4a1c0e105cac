#include "lib/btrfs/search.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <string>
#include <vector>

namespace oans {
namespace {

template <typename T>
void Put(std::string* s, size_t at, T v) {
  std::memcpy(s->data() + at, &v, sizeof v);  // the test machine is little-endian, as the disk format
}

TEST(BtrfsKeyTest, NextCarriesIntoTypeAndObjectid) {
  BtrfsKey k{5, 1, 7}, n;
  ASSERT_TRUE(k.Next(&n));
  EXPECT_EQ(n, (BtrfsKey{5, 1, 8}));
  ASSERT_TRUE((BtrfsKey{5, 1, ~uint64_t(0)}).Next(&n));
  EXPECT_EQ(n, (BtrfsKey{5, 2, 0}));
  ASSERT_TRUE((BtrfsKey{5, 255, ~uint64_t(0)}).Next(&n));
  EXPECT_EQ(n, (BtrfsKey{6, 0, 0}));
  EXPECT_FALSE(kBtrfsKeyMax.Next(&n));
  EXPECT_TRUE((BtrfsKey{5, 1, 9}) < (BtrfsKey{5, 2, 0}));
}

TEST(BtrfsDecodeTest, InodeItem) {
  std::string d(sizeof(btrfs_inode_item), '\0');
  Put<uint64_t>(&d, offsetof(btrfs_inode_item, generation), 3);
  Put<uint64_t>(&d, offsetof(btrfs_inode_item, transid), 42);
  Put<uint64_t>(&d, offsetof(btrfs_inode_item, size), 12345);
  Put<uint32_t>(&d, offsetof(btrfs_inode_item, nlink), 2);
  Put<uint32_t>(&d, offsetof(btrfs_inode_item, mode), 0100644);
  Put<uint64_t>(&d, offsetof(btrfs_inode_item, mtime), 100);
  Put<uint32_t>(&d, offsetof(btrfs_inode_item, mtime) + 8, 5);
  BtrfsInodeItem item;
  ASSERT_TRUE(DecodeInodeItem(d, &item));
  EXPECT_EQ(item.transid, 42u);
  EXPECT_EQ(item.size, 12345u);
  EXPECT_EQ(item.nlink, 2u);
  EXPECT_EQ(item.mode, 0100644u);
  EXPECT_EQ(item.mtime_ns, 100 * 1000000000LL + 5);
  EXPECT_FALSE(DecodeInodeItem(d.substr(0, d.size() - 1), &item));
}

std::string Ref(const std::string& name) {
  std::string r(sizeof(btrfs_inode_ref), '\0');
  Put<uint16_t>(&r, offsetof(btrfs_inode_ref, name_len), uint16_t(name.size()));
  return r + name;
}

TEST(BtrfsDecodeTest, InodeRefsHoldEveryNameAndRefuseAnOverrun) {
  std::vector<std::string> names;
  ASSERT_TRUE(DecodeInodeRefs(Ref("a") + Ref("second"), [&](std::string_view n) { names.emplace_back(n); }));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "second"}));
  std::string bad = Ref("abcdef");
  bad.resize(bad.size() - 2);  // the name runs past the item
  EXPECT_FALSE(DecodeInodeRefs(bad, [](std::string_view) {}));
}

TEST(BtrfsDecodeTest, DirItemNamesASubvolume) {
  std::string d(sizeof(btrfs_dir_item), '\0');
  const size_t loc = offsetof(btrfs_dir_item, location);
  Put<uint64_t>(&d, loc + offsetof(btrfs_disk_key, objectid), 257);
  d[loc + offsetof(btrfs_disk_key, type)] = char(kBtrfsRootItem);
  Put<uint16_t>(&d, offsetof(btrfs_dir_item, name_len), 3);
  d += "sub";
  std::vector<BtrfsDirEntry> seen;
  std::string name;
  ASSERT_TRUE(DecodeDirItems(d, [&](const BtrfsDirEntry& e) {
    seen.push_back(e);
    name = std::string(e.name);
  }));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].location.type, kBtrfsRootItem);
  EXPECT_EQ(seen[0].location.objectid, 257u);
  EXPECT_EQ(name, "sub");
  EXPECT_FALSE(DecodeDirItems(d.substr(0, d.size() - 1), [](const BtrfsDirEntry&) {}));
}

TEST(BtrfsDecodeTest, RootRefNamesWhereASubvolumeIsLinked) {
  std::string d(sizeof(btrfs_root_ref), '\0');
  Put<uint64_t>(&d, offsetof(btrfs_root_ref, dirid), 300);
  Put<uint16_t>(&d, offsetof(btrfs_root_ref, name_len), 4);
  d += "snap";
  BtrfsRootRef r;
  ASSERT_TRUE(DecodeRootRef(d, &r));
  EXPECT_EQ(r.dirid, 300u);
  EXPECT_EQ(r.name, "snap");
  EXPECT_FALSE(DecodeRootRef(d.substr(0, d.size() - 1), &r));  // a name cut short
  EXPECT_FALSE(DecodeRootRef(d.substr(0, sizeof(btrfs_root_ref) - 1), &r));
}

TEST(BtrfsDecodeTest, FileExtentRegularAndInline) {
  std::string d(sizeof(btrfs_file_extent_item), '\0');
  d[offsetof(btrfs_file_extent_item, type)] = BTRFS_FILE_EXTENT_REG;
  Put<uint64_t>(&d, offsetof(btrfs_file_extent_item, disk_bytenr), 1 << 20);
  Put<uint64_t>(&d, offsetof(btrfs_file_extent_item, num_bytes), 8192);
  BtrfsFileExtent x;
  ASSERT_TRUE(DecodeFileExtent(d, &x));
  EXPECT_EQ(x.disk_bytenr, 1u << 20);
  EXPECT_EQ(x.num_bytes, 8192u);
  EXPECT_FALSE(DecodeFileExtent(d.substr(0, d.size() - 1), &x));  // a regular extent needs its fields
  std::string in = d.substr(0, offsetof(btrfs_file_extent_item, disk_bytenr)) + "inline data";
  in[offsetof(btrfs_file_extent_item, type)] = BTRFS_FILE_EXTENT_INLINE;
  ASSERT_TRUE(DecodeFileExtent(in, &x));
  EXPECT_EQ(x.type, BTRFS_FILE_EXTENT_INLINE);
}

}  // namespace
}  // namespace oans
