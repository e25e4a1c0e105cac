// The planner's sort keys: fixed-size records.
// They flow between stages through ExternalSorters (lib/base/spill.h).
// Each sorts in the order the next stage reads it in.
// File ids are the order files were loaded in (lib/plan/details.h).
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/format/plan_file.h"

namespace oans {

// A pairing id is a base (filesystem, nodatacow, owner) times kKeyKinds plus the kind
// of key: of lib/format/sector_sum_encoding.h, or kSizePairedKind for files a scan left
// unread, paired by size alone (FileEntry::size_paired).
inline constexpr uint32_t kKeyKinds = 8;
inline constexpr uint32_t kSizePairedKind = kKeyKinds - 1;
inline bool PairedBySize(uint32_t pair) { return pair % kKeyKinds == kSizePairedKind; }

struct WholeKey {  // whole-file grouping: equal pair, size and hash; members in id order
  uint32_t pair, id;
  uint64_t size;
  Hash128 hash;
  uint64_t layout;  // hash of the extent list, 0 when empty or unusable: equal = sharing it all
};

struct WholeLess {
  bool operator()(const WholeKey& a, const WholeKey& b) const {
    return std::tie(a.pair, a.size, a.hash, a.id) < std::tie(b.pair, b.size, b.hash, b.id);
  }
};
struct InodeKey {  // one record per (filesystem, inode) across indexes
  uint64_t ino;
  uint32_t fs_key, id;
};
struct InodeLess {
  bool operator()(const InodeKey& a, const InodeKey& b) const {
    return std::tie(a.fs_key, a.ino, a.id) < std::tie(b.fs_key, b.ino, b.id);
  }
};
struct BlockKey {  // block grouping: equal pair and block hash
  Hash128 hash;
  uint32_t pair, file, blk, unused;
  uint64_t physical, physical_end;  // of the block's first and last byte (UINT64_MAX: none)
};
struct BlockLess {
  bool operator()(const BlockKey& x, const BlockKey& y) const {
    return std::tie(x.pair, x.hash, x.file, x.blk) < std::tie(y.pair, y.hash, y.file, y.blk);
  }
};
struct AnchorKey {  // a content-defined position in a file's sector sums (anchors.h)
  uint64_t hash;
  uint32_t pair, file, sector, unused = 0;
};
struct AnchorLess {
  bool operator()(const AnchorKey& x, const AnchorKey& y) const {
    return std::tie(x.pair, x.hash, x.file, x.sector) < std::tie(y.pair, y.hash, y.file, y.sector);
  }
};
struct PairKey {  // one identical block (or anchor sector) of a source and a destination
  uint32_t src, dst, sblk, dblk;
  int64_t delta() const { return int64_t(dblk) - int64_t(sblk); }
};
struct PairLess {
  bool operator()(const PairKey& x, const PairKey& y) const {
    return std::make_tuple(x.src, x.dst, x.delta(), x.sblk) < std::make_tuple(y.src, y.dst, y.delta(), y.sblk);
  }
};
struct RunKey {  // a run of identical blocks
  uint32_t src, dst;
  uint64_t offset, length, dst_offset;
};
struct RunLess {
  bool operator()(const RunKey& a, const RunKey& b) const {
    return std::tie(a.src, a.offset, a.length, a.dst, a.dst_offset) <
           std::tie(b.src, b.offset, b.length, b.dst, b.dst_offset);
  }
};
struct OpKey {  // an operation, by pass, then by the source's physical offset
  uint64_t physical, offset, length, seq;
  // Its one destination; with several, `dest_offset` is where the operation is in the
  // operation store.
  uint64_t dest_offset, dest_physical;
  uint32_t source, dests, dest;
  // The pass: 0 for a rewrite (frees.h), first of all.
  // 2 when the source is itself the destination of a partial run.
  // Those run last, after the source's own ranges have moved.
  // Their destinations then share the data's final extents.
  // The source's old extents go free. 1 for the others.
  uint32_t pass = 1;
  uint64_t stored() const { return dest_offset; }
  uint64_t bytes() const { return length * (1 + uint64_t(dests)); }  // read by the operation
};
struct OpLess {
  bool operator()(const OpKey& a, const OpKey& b) const {
    return std::tie(a.pass, a.physical, a.source, a.offset, a.seq) <
           std::tie(b.pass, b.physical, b.source, b.offset, b.seq);
  }
};

// A source range and its destinations, before it is split into operations (ops.h).
struct Unit {
  uint32_t src = 0;
  uint64_t offset = 0, length = 0;
  std::vector<PlanDest> dests;  // file = file id, physical filled later
};

}  // namespace oans
