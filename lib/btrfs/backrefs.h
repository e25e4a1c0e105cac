// What btrfs will free: the data extents behind a set of file addresses and every
// reference to each, in any subvolume, scanned or not. An extent goes free only when
// its last reference goes; snapshots and reflinked copies outside the scanned roots
// hold it too. Each extent is found in the extent tree (one search in key order over
// the addresses' span, merged with them), with the back references its items list
// (lib/btrfs/extent_item.h). Those name each (subvolume, inode) directly, unless a
// snapshot may hold the extent through a shared tree block: a shared reference, or
// a subvolume snapshotted since the extent was written (its ROOT_ITEM's
// last_snapshot, the test the kernel itself makes). Only then are its references
// counted by BTRFS_IOC_LOGICAL_INO_V2 with BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET,
// which resolves shared tree blocks into each subvolume holding them: one ioctl per
// extent. Subvolume facts (read-only, shared tree, size) come from the root tree.
// Needs CAP_SYS_ADMIN. LOGICAL_INO walks every back reference: run it apart from
// dedupes of the same extents (bees saw the two deadlock).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// One data extent and its references.
struct DataExtentRefs {
  uint64_t bytenr = 0;      // its logical address (key objectid in the extent tree)
  uint64_t disk_bytes = 0;  // bytes on disk (the compressed size for a compressed one)
  uint32_t refs = 0;        // distinct (subvolume, inode) pairs referencing it
  uint32_t ro_refs = 0;     // of those, in read-only subvolumes
  bool complete = true;     // false: more references than could be listed
  bool looked_up = false;   // counted by LOGICAL_INO_V2, not from its items
};

struct DataExtentsOptions {
  std::function<bool()> stop;  // asked between extents (may be empty)
  // Count every extent's references by LOGICAL_INO_V2, as a check of the items' reading.
  bool look_up_all = false;
};

// The data extents overlapping the address ranges `ranges` ([start, end), sorted, not
// overlapping) on the filesystem of `fd`, each once, in address order, appended to
// `out`.
Status DataExtentsAt(int fd, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                     const DataExtentsOptions& options, std::vector<DataExtentRefs>* out);

// A subvolume as the root tree has it.
struct SubvolumeFacts {
  bool read_only = false;
  // Its tree blocks may be shared with another subvolume's: it is a snapshot, or
  // another subvolume is a snapshot of it.
  bool shared = false;
  uint64_t tree_bytes = 0;       // its tree's size (ROOT_ITEM bytes_used)
  uint32_t node_size = 16384;
  uint32_t metadata_copies = 1;  // the metadata profile's copies
};
Result<SubvolumeFacts> SubvolumeFactsOf(int fd, uint64_t subvolume);

}  // namespace oans
