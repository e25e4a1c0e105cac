// A followed scan's leaves written since, read by the scan itself from the device in
// large requests, instead of through the kernel's tree search.
//
// The search reads a tree block at a time, each a request of its own (16 KiB), and
// copies every item out through its buffer. After a dedupe or a backup's atimes, most
// of a subvolume's leaves were written since the previous scan: the kernel tree x 2
// then has 66 or 135 MiB of them, 4,200 or 8,700 leaves. Read here, they come in a few
// hundred requests, each covering the leaves that lie together on the disk.
//
// The leaves are laid out from the tree's internal nodes (tree_layout.h: the chunk map,
// single and DUP profiles, each node checked against its parent); only those written in
// `since` or later, as the search with that min_transid returns them, and an older leaf
// beside one where an inode's items run from one into the other: of it, that inode's
// items alone. The search returns such an inode's items in part, and it would be
// searched again whole; the judge now has them all. Each leaf read is
// checked before any of its items is used: its checksum (crc32c or XXH64), filesystem,
// address, generation, level and keys. The scan committed the filesystem's changes
// first (syncfs), so the blocks on disk are the tree as it was then; a leaf freed and
// written again since, or torn by a write under way, fails the check, and the rest of
// the range comes from the kernel's search from that leaf's first key on, in key order
// still: the live tree, whose items are the same unless it changed since the commit
// (what changed then has a newer generation than the one the scan records, and is
// searched again next time).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/btrfs/search.h"
#include "lib/btrfs/tree_layout.h"

namespace oans {

struct ChangedLeavesStats {
  std::atomic<uint64_t> leaves{0};     // read from the device and used
  std::atomic<uint64_t> requests{0};   // reads from the device
  std::atomic<uint64_t> bytes{0};      // bytes read from the device (leaves and the gaps between)
  std::atomic<uint64_t> searched{0};   // ranges handed to the kernel's search (a leaf failed its check)
};

class ChangedLeaves {
 public:
  // The leaves of the subvolume of `fd` written in transaction `since` or later that
  // hold items of inodes `first` to `last`. An error when they cannot be read from the
  // device: a profile not mapped, a checksum kind oans does not compute (SHA-256,
  // BLAKE2), a device that cannot be opened, a node that is not the one its parent
  // names. The caller then searches.
  static Result<std::unique_ptr<ChangedLeaves>> Lay(Sys& sys, int fd, uint64_t since, uint64_t first,
                                                    uint64_t last, ChangedLeavesStats* stats);
  ChangedLeaves(const ChangedLeaves&) = delete;
  ChangedLeaves& operator=(const ChangedLeaves&) = delete;

  // Calls `visit` for each item of inodes `first` to `last` (within those laid out) in
  // the leaves written since, in key order, until it returns false: what the search of
  // those keys with min_transid `since` returns, and the items in older leaves beside
  // them of the inodes whose items run into those. Any thread; calls for ranges apart
  // may run at once, each with a buffer of its own (kWindowBytes + kGapBytes). From a
  // leaf that fails its check on, the search's items alone.
  Status Visit(uint64_t first, uint64_t last, const BtrfsVisitor& visit) const;

  size_t size() const { return leaves_.size(); }

  // Leaves read at once: 1 MiB of them (in key order). A gap of up to 64 KiB between two
  // is read through (one request instead of two), up to 1 MiB of gaps. After a backup's
  // atimes on the kernel tree x 2: 8,656 leaves (135 MiB) in 1,147 requests of 170 MiB
  // in all; with gaps of at most 16 KiB read, 1,687 requests, and slower; with gaps of
  // up to 1 MiB, 271 requests of 331 MiB, and no faster (a 64 KiB read costs an SSD
  // little more than a 16 KiB one, and its bandwidth is shared by the judges).
  static constexpr uint64_t kWindowBytes = 1 << 20, kGapRead = 64 << 10, kGapBytes = 1 << 20;

 private:
  ChangedLeaves(Sys& sys, int fd, uint64_t since, BtrfsInfo info, ChangedLeavesStats* stats);
  struct Request;
  // Leaves [from, to) of leaves_ (in key order): the reads that bring them, in the order
  // of their places, each leaf's place in the buffer.
  size_t PlanWindow(size_t from, size_t end, std::vector<Request>* reads, std::vector<size_t>* at) const;
  Status ReadWindow(const std::vector<Request>& reads, char* buf) const;
  // The items of `first` to `last` from key `from` on, from the kernel's search.
  Status Search(const BtrfsKey& from, uint64_t last, const BtrfsVisitor& visit) const;

  Sys& sys_;
  const int fd_;
  const uint64_t since_;
  const BtrfsInfo info_;
  ChunkMap chunks_;
  mutable TreeDevices devices_;
  std::vector<TreeBlock> leaves_;  // by first key
  ChangedLeavesStats* stats_;
};

}  // namespace oans
