#include "lib/btrfs/extent_item.h"

#include <endian.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <set>
#include <string>

namespace oans {
namespace {

template <typename T>
void Append(std::string* s, const T& v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string ExtentItem(uint64_t refs, uint64_t generation, uint64_t flags = BTRFS_EXTENT_FLAG_DATA) {
  btrfs_extent_item x{};
  x.refs = htole64(refs);
  x.generation = htole64(generation);
  x.flags = htole64(flags);
  std::string s;
  Append(&s, x);
  return s;
}

btrfs_extent_data_ref DataRef(uint64_t root, uint64_t inode, uint64_t offset, uint32_t count) {
  btrfs_extent_data_ref r{};
  r.root = htole64(root);
  r.objectid = htole64(inode);
  r.offset = htole64(offset);
  r.count = htole32(count);
  return r;
}

// Inline: the type, then the data reference where the inline offset would be.
void InlineData(std::string* s, uint64_t root, uint64_t inode, uint32_t count) {
  s->push_back(char(BTRFS_EXTENT_DATA_REF_KEY));
  Append(s, DataRef(root, inode, 0, count));
}

// Inline: the type and parent block, then the shared reference's count.
void InlineShared(std::string* s, uint64_t parent, uint32_t count) {
  btrfs_extent_inline_ref i{};
  i.type = BTRFS_SHARED_DATA_REF_KEY;
  i.offset = htole64(parent);
  Append(s, i);
  btrfs_shared_data_ref r{};
  r.count = htole32(count);
  Append(s, r);
}

// Simple quotas' owner reference: the type and the root, no count.
void InlineOwner(std::string* s, uint64_t root) {
  btrfs_extent_inline_ref i{};
  i.type = kBtrfsExtentOwnerRef;
  i.offset = htole64(root);
  Append(s, i);
}

TEST(ExtentItemTest, InlineReferencesOwnerSkipped) {
  std::string d = ExtentItem(5, 77);
  InlineOwner(&d, 256);
  InlineData(&d, 5, 257, 2);
  InlineData(&d, 256, 300, 1);
  InlineShared(&d, 30 << 20, 1);
  BtrfsDataExtent x;
  ASSERT_TRUE(DecodeDataExtentItem(d, &x));
  EXPECT_TRUE(x.data);
  EXPECT_EQ(x.refs, 5u);  // one more keyed
  EXPECT_EQ(x.generation, 77u);
  ASSERT_EQ(x.inline_refs.size(), 3u);
  EXPECT_FALSE(x.inline_refs[0].shared);
  EXPECT_EQ(x.inline_refs[0].root, 5u);
  EXPECT_EQ(x.inline_refs[0].inode, 257u);
  EXPECT_EQ(x.inline_refs[0].count, 2u);
  EXPECT_EQ(x.inline_refs[1].root, 256u);
  EXPECT_EQ(x.inline_refs[1].inode, 300u);
  EXPECT_TRUE(x.inline_refs[2].shared);
  EXPECT_EQ(x.inline_refs[2].parent, uint64_t(30) << 20);
  EXPECT_EQ(x.inline_refs[2].count, 1u);
}

TEST(ExtentItemTest, NoInlineReferencesAllKeyed) {
  BtrfsDataExtent x;
  ASSERT_TRUE(DecodeDataExtentItem(ExtentItem(40, 9), &x));
  EXPECT_TRUE(x.data);
  EXPECT_EQ(x.refs, 40u);
  EXPECT_TRUE(x.inline_refs.empty());
}

TEST(ExtentItemTest, TreeBlockItemIsNoDataExtent) {
  std::string d = ExtentItem(1, 9, BTRFS_EXTENT_FLAG_TREE_BLOCK);
  d.append(sizeof(btrfs_tree_block_info), '\0');
  BtrfsDataExtent x;
  ASSERT_TRUE(DecodeDataExtentItem(d, &x));
  EXPECT_FALSE(x.data);
}

TEST(ExtentItemTest, KeyedReferences) {
  std::string d;
  Append(&d, DataRef(257, 1000, 4096, 3));
  BtrfsDataRef r;
  ASSERT_TRUE(DecodeDataRefItem({1 << 20, kBtrfsExtentDataRef, 0x1234}, d, &r));
  EXPECT_FALSE(r.shared);
  EXPECT_EQ(r.root, 257u);
  EXPECT_EQ(r.inode, 1000u);
  EXPECT_EQ(r.count, 3u);
  std::string s;
  btrfs_shared_data_ref sr{};
  sr.count = htole32(2);
  Append(&s, sr);
  ASSERT_TRUE(DecodeDataRefItem({1 << 20, kBtrfsSharedDataRef, 5 << 20}, s, &r));
  EXPECT_TRUE(r.shared);
  EXPECT_EQ(r.parent, uint64_t(5) << 20);
  EXPECT_EQ(r.count, 2u);
}

TEST(ExtentItemTest, KeyedReferencesRefusedWhenMalformed) {
  std::string d;
  Append(&d, DataRef(257, 1000, 0, 1));
  BtrfsDataRef r;
  EXPECT_FALSE(DecodeDataRefItem({1, kBtrfsExtentDataRef, 0}, d.substr(0, d.size() - 1), &r));  // short
  EXPECT_FALSE(DecodeDataRefItem({1, kBtrfsExtentDataRef, 0}, d + '\0', &r));                  // long
  EXPECT_FALSE(DecodeDataRefItem({1, kBtrfsSharedDataRef, 4096}, d, &r));  // another type's size
  EXPECT_FALSE(DecodeDataRefItem({1, BTRFS_TREE_BLOCK_REF_KEY, 5}, "", &r));
  std::string zero;
  Append(&zero, DataRef(257, 1000, 0, 0));
  EXPECT_FALSE(DecodeDataRefItem({1, kBtrfsExtentDataRef, 0}, zero, &r));
  EXPECT_FALSE(DecodeDataRefItem({1, kBtrfsSharedDataRef, 4096}, std::string(4, '\0'), &r));
}

TEST(ExtentItemTest, RefusedWhenMalformed) {
  BtrfsDataExtent x;
  const std::string head = ExtentItem(2, 7);
  EXPECT_FALSE(DecodeDataExtentItem(head.substr(0, sizeof(btrfs_extent_item) - 1), &x));
  EXPECT_FALSE(DecodeDataExtentItem(ExtentItem(0, 7), &x));  // no references at all
  std::string over = head;                                    // counts above the total
  InlineData(&over, 5, 257, 2);
  InlineData(&over, 5, 258, 1);
  EXPECT_FALSE(DecodeDataExtentItem(over, &x));
  std::string zero = head;
  InlineData(&zero, 5, 257, 0);
  EXPECT_FALSE(DecodeDataExtentItem(zero, &x));
  std::string zero_shared = head;
  InlineShared(&zero_shared, 4096, 0);
  EXPECT_FALSE(DecodeDataExtentItem(zero_shared, &x));
  std::string tree_ref = head;  // a tree block's reference in a data extent
  btrfs_extent_inline_ref i{};
  i.type = BTRFS_TREE_BLOCK_REF_KEY;
  i.offset = htole64(5);
  Append(&tree_ref, i);
  EXPECT_FALSE(DecodeDataExtentItem(tree_ref, &x));
  std::string unknown = head;
  unknown.push_back(char(200));
  EXPECT_FALSE(DecodeDataExtentItem(unknown, &x));
}

// Every cut of a valid item is refused, but at the end of an inline reference whose
// counts stay within the total: never read past the item.
TEST(ExtentItemTest, EveryCutRefusedOrAtAReference) {
  std::string d = ExtentItem(4, 3);
  std::set<size_t> ends{d.size()};
  InlineOwner(&d, 5);
  ends.insert(d.size());
  InlineData(&d, 5, 257, 1);
  ends.insert(d.size());
  InlineShared(&d, 1 << 20, 2);
  ends.insert(d.size());
  InlineData(&d, 256, 260, 1);
  ends.insert(d.size());
  for (size_t n = 0; n <= d.size(); ++n) {
    std::string cut(d.data(), n);  // its own buffer: a read past it is caught by ASan
    BtrfsDataExtent x;
    EXPECT_EQ(DecodeDataExtentItem(cut, &x), ends.count(n) > 0) << "cut at " << n;
  }
}

}  // namespace
}  // namespace oans
