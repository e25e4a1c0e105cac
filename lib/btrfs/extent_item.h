// A data extent's back references as the extent tree lists them (linux/btrfs_tree.h).
// Its EXTENT_ITEM (key: bytenr, EXTENT_ITEM, length) holds the total count and inline
// references; keyed items may follow it under the same bytenr, when the inline ones
// outgrow the item. An EXTENT_DATA_REF names a subvolume and an inode. A
// SHARED_DATA_REF names only a tree block that snapshots share: not who holds it.
// Sizes and counts in the items are checked, never trusted.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lib/btrfs/search.h"

namespace oans {

inline constexpr uint8_t kBtrfsExtentItem = 168, kBtrfsExtentDataRef = 178, kBtrfsSharedDataRef = 184;
// Linux 6.7's simple quotas: the subvolume that made the extent, not a reference.
inline constexpr uint8_t kBtrfsExtentOwnerRef = 172;

// One back reference, standing for `count` file extent items.
struct BtrfsDataRef {
  bool shared = false;           // a SHARED_DATA_REF
  uint64_t root = 0, inode = 0;  // an EXTENT_DATA_REF's subvolume and inode
  uint64_t parent = 0;           // a SHARED_DATA_REF's tree block
  uint32_t count = 0;
};

// A data EXTENT_ITEM's fields and inline references.
struct BtrfsDataExtent {
  bool data = false;        // false: a tree block's item (nothing else read)
  uint64_t refs = 0;        // every reference's count, inline and keyed, summed
  uint64_t generation = 0;  // the transaction that allocated it
  std::vector<BtrfsDataRef> inline_refs;
};

// Decodes an EXTENT_ITEM. False when malformed: shorter than its fixed part, no
// references, an inline reference of an unknown or tree block type, one overrunning
// the item, a zero count, or counts above the total.
bool DecodeDataExtentItem(std::string_view data, BtrfsDataExtent* out);

// Decodes a keyed EXTENT_DATA_REF or SHARED_DATA_REF item, with its key. False for
// another type, a size other than its struct's, or a zero count.
bool DecodeDataRefItem(const BtrfsKey& key, std::string_view data, BtrfsDataRef* out);

}  // namespace oans
