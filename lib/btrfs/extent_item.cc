#include "lib/btrfs/extent_item.h"

#include <endian.h>
#include <linux/btrfs_tree.h>

#include <cstddef>
#include <cstring>

namespace oans {
namespace {

// The layouts read, as the kernel's uapi header has them.
static_assert(sizeof(btrfs_extent_item) == 24 && offsetof(btrfs_extent_item, flags) == 16);
static_assert(sizeof(btrfs_extent_inline_ref) == 9 && offsetof(btrfs_extent_inline_ref, offset) == 1);
static_assert(sizeof(btrfs_extent_data_ref) == 28 && offsetof(btrfs_extent_data_ref, count) == 24);
static_assert(sizeof(btrfs_shared_data_ref) == 4);
static_assert(kBtrfsExtentItem == BTRFS_EXTENT_ITEM_KEY && kBtrfsExtentDataRef == BTRFS_EXTENT_DATA_REF_KEY &&
              kBtrfsSharedDataRef == BTRFS_SHARED_DATA_REF_KEY);
#ifdef BTRFS_EXTENT_OWNER_REF_KEY
static_assert(kBtrfsExtentOwnerRef == BTRFS_EXTENT_OWNER_REF_KEY);
#endif

uint64_t Le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return le64toh(v);
}

uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return le32toh(v);
}

// A btrfs_extent_data_ref at `p`, inline or keyed.
BtrfsDataRef DataRefAt(const char* p) {
  BtrfsDataRef r;
  r.root = Le64(p + offsetof(btrfs_extent_data_ref, root));
  r.inode = Le64(p + offsetof(btrfs_extent_data_ref, objectid));
  r.count = Le32(p + offsetof(btrfs_extent_data_ref, count));
  return r;
}

// The inline reference at `d[off]`, and its size; 0 when it is malformed. An
// owner reference gives a zero count: it is skipped.
size_t InlineRefAt(std::string_view d, size_t off, BtrfsDataRef* r) {
  const char* p = d.data() + off;
  const size_t left = d.size() - off;
  *r = {};
  switch (uint8_t(p[offsetof(btrfs_extent_inline_ref, type)])) {
    case kBtrfsExtentDataRef: {
      // The data reference starts where the inline reference's offset would.
      constexpr size_t kSize = offsetof(btrfs_extent_inline_ref, offset) + sizeof(btrfs_extent_data_ref);
      if (left < kSize) return 0;
      *r = DataRefAt(p + offsetof(btrfs_extent_inline_ref, offset));
      return r->count ? kSize : 0;
    }
    case kBtrfsSharedDataRef: {
      constexpr size_t kSize = sizeof(btrfs_extent_inline_ref) + sizeof(btrfs_shared_data_ref);
      if (left < kSize) return 0;
      r->shared = true;
      r->parent = Le64(p + offsetof(btrfs_extent_inline_ref, offset));
      r->count = Le32(p + sizeof(btrfs_extent_inline_ref) + offsetof(btrfs_shared_data_ref, count));
      return r->count ? kSize : 0;
    }
    case kBtrfsExtentOwnerRef:
      return left < sizeof(btrfs_extent_inline_ref) ? 0 : sizeof(btrfs_extent_inline_ref);
    default:  // a tree block's reference, or a type unknown here
      return 0;
  }
}

}  // namespace

bool DecodeDataExtentItem(std::string_view d, BtrfsDataExtent* out) {
  out->inline_refs.clear();
  if (d.size() < sizeof(btrfs_extent_item)) return false;
  out->refs = Le64(d.data() + offsetof(btrfs_extent_item, refs));
  out->generation = Le64(d.data() + offsetof(btrfs_extent_item, generation));
  const uint64_t flags = Le64(d.data() + offsetof(btrfs_extent_item, flags));
  out->data = (flags & BTRFS_EXTENT_FLAG_DATA) && !(flags & BTRFS_EXTENT_FLAG_TREE_BLOCK);
  if (!out->data) return true;
  if (out->refs == 0) return false;
  uint64_t counted = 0;
  for (size_t off = sizeof(btrfs_extent_item); off < d.size();) {
    BtrfsDataRef r;
    const size_t n = InlineRefAt(d, off, &r);
    if (n == 0) return false;
    off += n;
    if (r.count == 0) continue;  // an owner reference
    counted += r.count;
    if (counted > out->refs) return false;
    out->inline_refs.push_back(r);
  }
  return true;
}

bool DecodeDataRefItem(const BtrfsKey& key, std::string_view d, BtrfsDataRef* out) {
  *out = {};
  if (key.type == kBtrfsExtentDataRef && d.size() == sizeof(btrfs_extent_data_ref)) {
    *out = DataRefAt(d.data());
  } else if (key.type == kBtrfsSharedDataRef && d.size() == sizeof(btrfs_shared_data_ref)) {
    out->shared = true;
    out->parent = key.offset;
    out->count = Le32(d.data() + offsetof(btrfs_shared_data_ref, count));
  } else {
    return false;
  }
  return out->count > 0;
}

}  // namespace oans
