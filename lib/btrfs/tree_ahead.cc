#include "lib/btrfs/tree_ahead.h"

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "lib/base/fd.h"
#include "lib/btrfs/search.h"

namespace oans {
namespace {

// Chunks of one device whose stripe 0 is the copy btrfs reads: single and DUP. Striped
// profiles (RAID0, RAID10, RAID5, RAID6) and mirrored ones (RAID1*, read from the copy
// the reading process's pid picks) are not mapped here.
constexpr uint64_t kNotMapped = BTRFS_BLOCK_GROUP_PROFILE_MASK & ~uint64_t(BTRFS_BLOCK_GROUP_DUP);
constexpr int kMaxLevel = 8;  // BTRFS_MAX_LEVEL

// Logical addresses of the filesystem's metadata to (device, offset): from the chunk tree.
class ChunkMap {
 public:
  Status Load(Sys& sys, int fd) {
    BtrfsSearch s;
    s.tree_id = kBtrfsChunkTree;
    s.min = {kBtrfsFirstChunkTreeObjectid, kBtrfsChunkItem, 0};
    s.max = {kBtrfsFirstChunkTreeObjectid, kBtrfsChunkItem, ~uint64_t(0)};
    return sys.TreeSearch(fd, s, [&](const BtrfsItem& it) {
      BtrfsChunk c;
      if (DecodeChunk(it.data, &c) && !(c.type & kNotMapped) && c.length > 0) chunks_[it.key.offset] = c;
      return true;
    });
  }
  // False when `logical` is in no mapped chunk (or the block would cross its end).
  bool Map(uint64_t logical, uint64_t length, uint64_t* devid, uint64_t* physical) const {
    auto it = chunks_.upper_bound(logical);
    if (it == chunks_.begin()) return false;
    --it;
    const uint64_t into = logical - it->first;
    if (into >= it->second.length || it->second.length - into < length) return false;
    *devid = it->second.devid;
    *physical = it->second.physical + into;
    return true;
  }

 private:
  std::map<uint64_t, BtrfsChunk> chunks_;  // by logical start
};

// The filesystem's devices, opened for direct reads as they are first needed.
class Devices {
 public:
  Devices(Sys& sys, int fd) : sys_(sys), fd_(fd) {}
  Result<int> Get(uint64_t devid) {
    auto it = open_.find(devid);
    if (it != open_.end()) return it->second.get();
    auto path = sys_.BtrfsDevicePath(fd_, devid);
    if (!path.ok()) return path.status();
    OANS_ASSIGN_OR_RETURN(Fd dev, Own(sys_, sys_.OpenBlockDevice(*path)));
    return open_.emplace(devid, std::move(dev)).first->second.get();
  }

 private:
  Sys& sys_;
  const int fd_;
  std::map<uint64_t, Fd> open_;
};

// What every read of one call works with.
struct Reading {
  Sys& sys;
  int fd;
  const BtrfsInfo& info;
  const ChunkMap& chunks;
  Devices* devices;
  const TreeAheadStop& stop;
};

struct Block {
  uint64_t physical;  // on its device, for the order
  uint64_t devid;
  BtrfsNodePtr ptr;   // where it is and the first key below it
  // The first key past it: its next sibling's (none for the tree's last blocks).
  std::optional<BtrfsKey> end;
};

// Reads the tree block `ptr` points to from its device, checks it is the one meant
// (filesystem, address, generation, level, keys in order) and decodes it.
Status ReadNode(const Reading& r, const Block& b, uint8_t level, BtrfsNode* out) {
  const BtrfsInfo& info = r.info;
  const uint32_t node_size = info.node_size;
  auto dev = r.devices->Get(b.devid);
  if (!dev.ok()) return dev.status();
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> mem(static_cast<char*>(std::aligned_alloc(4096, node_size)));
  if (!mem) return Status::Io("tree block buffer", ENOMEM);
  auto n = r.sys.Pread(*dev, mem.get(), node_size, b.physical);
  if (!n.ok()) return n.status();
  if (*n != node_size || !DecodeNode(std::string_view(mem.get(), node_size), out) || out->fsid != info.uuid ||
      out->bytenr != b.ptr.bytenr || out->generation != b.ptr.generation || out->level != level)
    return Status::Corrupt("tree block at " + std::to_string(b.ptr.bytenr) + " is not the one its parent names");
  for (size_t i = 1; i < out->ptrs.size(); ++i)
    if (!(out->ptrs[i - 1].key < out->ptrs[i].key))
      return Status::Corrupt("tree block at " + std::to_string(b.ptr.bytenr) + " has keys out of order");
  return Status::Ok();
}

// The leaves of tree `range.tree_id` written in transaction `since` or later that hold
// keys of `range`, each with its first key, in the order of their places on disk: its
// internal nodes read level by level (each level in disk order too), none older than
// `since` and none wholly outside the range. An error when its blocks take more than
// `budget` bytes; with `since`, only the blocks written since count, and past the budget
// the leaves are cut to those of the lowest keys that fit (*cut set, *cut_at the first
// key of the first leaf left out).
Status LeavesOnDisk(const Reading& r, const BtrfsSearch& range, uint64_t since, uint64_t budget,
                    std::vector<Block>* leaves, bool* cut, BtrfsKey* cut_at) {
  const uint64_t tree_id = range.tree_id;
  const ChunkMap& chunks = r.chunks;
  const TreeAheadStop& stop = r.stop;
  const uint32_t node_size = r.info.node_size;
  BtrfsRootItem root;
  bool found = false;
  BtrfsSearch s;
  s.tree_id = kBtrfsRootTree;
  s.min = {tree_id, kBtrfsRootItem, 0};
  s.max = {tree_id, kBtrfsRootItem, ~uint64_t(0)};
  OANS_RETURN_IF_ERROR(r.sys.TreeSearch(r.fd, s, [&](const BtrfsItem& it) {
    found = DecodeRootItem(it.data, &root);
    return !found;
  }));
  if (!found) return Status::Invalid("no root item for tree " + std::to_string(tree_id));
  if (since == 0 && root.bytes_used > budget)
    return Status::Invalid("tree " + std::to_string(tree_id) + " is larger than the budget");
  if (root.level >= kMaxLevel) return Status::Corrupt("tree " + std::to_string(tree_id) + " is too deep");
  const uint64_t most_blocks = root.bytes_used / std::max<uint32_t>(node_size, 1) + 1;
  std::vector<Block> level;
  leaves->clear();
  if (root.generation < since) return Status::Ok();  // nothing written since
  Block top{0, 0, {BtrfsKey{}, root.bytenr, root.generation}, std::nullopt};
  if (!chunks.Map(root.bytenr, node_size, &top.devid, &top.physical))
    return Status::Invalid("the root block of tree " + std::to_string(tree_id) + " is in no mapped chunk");
  level.push_back(top);
  for (int l = root.level; l > 0; --l) {
    std::vector<Block> below;
    for (const Block& b : level) {
      if (stop && stop()) return Status::Interrupted("stopped");
      BtrfsNode node;
      OANS_RETURN_IF_ERROR(ReadNode(r, b, uint8_t(l), &node));
      if (below.size() + node.ptrs.size() > most_blocks)
        return Status::Corrupt("tree " + std::to_string(tree_id) + " has more blocks than its root item says");
      for (size_t i = 0; i < node.ptrs.size(); ++i) {
        const BtrfsNodePtr& p = node.ptrs[i];
        if (p.generation < since) continue;  // copy on write: nothing below changed
        Block child{0, 0, p, i + 1 < node.ptrs.size() ? std::optional(node.ptrs[i + 1].key) : b.end};
        if (range.max < p.key || (child.end && !(range.min < *child.end))) continue;  // outside the range
        if (!chunks.Map(p.bytenr, node_size, &child.devid, &child.physical))
          return Status::Invalid("a block of tree " + std::to_string(tree_id) + " is in no mapped chunk");
        below.push_back(child);
      }
    }
    std::sort(below.begin(), below.end(), [](const Block& a, const Block& b) {
      return std::tie(a.devid, a.physical) < std::tie(b.devid, b.physical);
    });
    level = std::move(below);
  }
  const size_t fit = budget / std::max<uint32_t>(node_size, 1);
  if (level.size() > fit) {
    auto by_key = [](const Block& a, const Block& b) { return a.ptr.key < b.ptr.key; };
    std::nth_element(level.begin(), level.begin() + fit, level.end(), by_key);
    *cut_at = level[fit].ptr.key;
    level.resize(fit);
    std::sort(level.begin(), level.end(), [](const Block& a, const Block& b) {
      return std::tie(a.devid, a.physical) < std::tie(b.devid, b.physical);
    });
    *cut = true;
  }
  *leaves = std::move(level);
  return Status::Ok();
}

// A leaf to read and the search of its tree (its key range).
struct LeafRead {
  Block leaf;
  const BtrfsSearch* tree;
};

// Adds the leaves of tree `whole.tree_id` to *reads, each with its first key. False, with
// nothing added, when the tree cannot be laid out that way (a striped profile, a device
// that cannot be opened, a block that is not the one its parent names) or is larger than
// `budget` (with `since`: its blocks written since are cut to the budget, *cut set,
// *cut_at where).
bool LayOut(const Reading& r, const BtrfsSearch& whole, uint64_t since, uint64_t budget,
            std::vector<LeafRead>* reads, bool* cut, BtrfsKey* cut_at) {
  std::vector<Block> leaves;
  if (!LeavesOnDisk(r, whole, since, budget, &leaves, cut, cut_at).ok()) return false;
  for (const Block& leaf : leaves) reads->push_back({leaf, &whole});
  return true;
}

// The leaves of every tree laid out, in one pass in the order of their places on disk
// (the trees' leaves lie among each other's, so a pass per tree would cross the metadata
// once per tree): one search per leaf from its first key for a single item, so the kernel
// reads that leaf (and the internal nodes above it, with the first search below each)
// and no other. `readers` threads each take the next leaf; the first error ends them all.
Status ReadInDiskOrder(const Reading& r, std::vector<LeafRead>& reads, int readers, TreeAheadStats* stats) {
  std::stable_sort(reads.begin(), reads.end(), [](const LeafRead& a, const LeafRead& b) {
    return std::tie(a.leaf.devid, a.leaf.physical) < std::tie(b.leaf.devid, b.leaf.physical);
  });
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> read{0};
  std::mutex mu;
  Status first;  // the first error, under mu
  auto fail = [&](Status s) {
    next = reads.size();  // the others stop at their next leaf
    std::lock_guard<std::mutex> hold(mu);
    if (first.ok()) first = std::move(s);
  };
  auto work = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1)) < reads.size();) {
        if (r.stop && r.stop()) return;
        BtrfsSearch one = *reads[i].tree;
        one.min = std::max(reads[i].leaf.ptr.key, reads[i].tree->min);
        one.max_items = 1;
        Status s = r.sys.TreeSearch(r.fd, one, [](const BtrfsItem&) { return true; });
        if (!s.ok()) return fail(std::move(s));
        read++;
      }
    } catch (const std::exception& e) {  // on a thread of its own, it must not escape
      fail(Status::Io(std::string("tree read-ahead: ") + e.what(), ENOMEM));
    }
  };
  std::vector<std::thread> others;
  const size_t threads = std::min<size_t>(std::max(readers, 1), reads.size());
  try {
    others.reserve(threads);
    for (size_t t = 1; t < threads; ++t) others.emplace_back(work);
  } catch (...) {  // no more threads to be had: those started read
  }
  work();
  for (auto& t : others) t.join();
  stats->bytes += read * r.info.node_size;
  stats->leaves += read;
  return first;
}

// Tree `s` in key order instead: every item of its range, discarded, within the budget.
Status ReadInKeyOrder(const Reading& r, const BtrfsSearch& s, uint64_t budget, TreeAheadStats* stats) {
  const TreeAheadStop& stop = r.stop;
  uint64_t items = 0;
  return r.sys.TreeSearch(r.fd, s, [&](const BtrfsItem& item) {
    stats->bytes += item.data.size();
    if (stop && ++items % 256 == 0 && stop()) return false;
    if (stats->bytes < budget) return true;
    stats->cut_short = true;
    return false;
  });
}

// The trees job.what names, each with its key range; with `fs_trees`, the trees of the
// whole filesystem too.
Result<std::vector<BtrfsSearch>> TreesOf(Sys& sys, int fd, const TreeAheadJob& job, bool fs_trees) {
  std::vector<BtrfsSearch> trees;
  if (job.what == TreesFor::kApply) {
    if (fs_trees) {
      trees.emplace_back().tree_id = kBtrfsExtentTree;
      trees.emplace_back().tree_id = kBtrfsFreeSpaceTree;
    }
    return trees;
  }
  auto id = sys.Identify(fd);
  if (!id.ok()) return id.status();
  BtrfsSearch& t = trees.emplace_back();
  t.tree_id = id->subvolume;
  if (job.what == TreesFor::kChanges) {
    t.min = {job.first_inode, kBtrfsInodeItem, 0};  // an inode's first item: none lies below
    if (job.end_inode != 0 && job.end_inode != ~uint64_t(0)) t.max = {job.end_inode - 1, 255, ~uint64_t(0)};
  } else if (fs_trees) {
    BtrfsSearch& csums = trees.emplace_back();
    csums.tree_id = kBtrfsCsumTree;
    csums.min = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 0};
    csums.max = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, ~uint64_t(0)};
  }
  return trees;
}

}  // namespace

Status ReadTreesAhead(Sys& sys, int fd, const TreeAheadJob& job, TreeAheadStats* stats) {
  const TreesFor what = job.what;
  const uint64_t budget = job.budget;
  const TreeAheadStop& stop = job.stop;
  stats->whole = false;
  stats->cut = false;
  stats->inodes_below = job.first_inode;
  auto info = sys.BtrfsInfoOf(fd);
  if (!info.ok()) return info.status();
  // Trees of the whole filesystem are read once per filesystem, whatever the roots.
  const bool fs_trees = std::find(stats->filesystems.begin(), stats->filesystems.end(), info->uuid) ==
                        stats->filesystems.end();
  if (fs_trees) stats->filesystems.push_back(info->uuid);
  auto listed = TreesOf(sys, fd, job, fs_trees);
  if (!listed.ok()) return listed.status();
  const std::vector<BtrfsSearch>& trees = *listed;
  const uint64_t since = what == TreesFor::kChanges ? job.since : 0;
  ChunkMap chunks;
  const bool mapped = chunks.Load(sys, fd).ok();
  Devices devices(sys, fd);
  const Reading r{sys, fd, *info, chunks, &devices, stop};
  std::vector<LeafRead> reads;
  std::vector<const BtrfsSearch*> in_key_order;
  bool cut = false, laid_out = true;
  BtrfsKey cut_at = kBtrfsKeyMax;
  for (const BtrfsSearch& s : trees) {
    if (stop && stop()) return Status::Ok();
    const uint64_t planned = stats->bytes + reads.size() * info->node_size;
    if (planned >= budget) {
      cut = true;
      break;
    }
    if (mapped && s.tree_id && LayOut(r, s, since, budget - planned, &reads, &cut, &cut_at)) {
      stats->on_disk = true;
    } else {
      laid_out = false;
      if (what == TreesFor::kScan) in_key_order.push_back(&s);  // apply leaves a tree it cannot lay out
    }
  }
  if (reads.size() * info->node_size < job.least) {
    reads.clear();
    laid_out = false;
    // A budget under the least could never be worth reading: that is no cut.
    if (budget < job.least) cut = false;
  }
  stats->cut = cut;
  if (cut) stats->cut_short = true;
  OANS_RETURN_IF_ERROR(ReadInDiskOrder(r, reads, job.readers, stats));
  if (stop && stop()) return Status::Ok();  // not all read: none said to be
  stats->whole = laid_out && !cut && in_key_order.empty();
  if (what == TreesFor::kChanges && laid_out && !reads.empty())
    stats->inodes_below = cut ? std::max(job.first_inode, cut_at.objectid) : job.end_inode;
  for (const BtrfsSearch* s : in_key_order) {
    if (stop && stop()) break;
    if (stats->bytes >= budget) {
      stats->cut_short = true;
      break;
    }
    OANS_RETURN_IF_ERROR(ReadInKeyOrder(r, *s, budget, stats));
  }
  return Status::Ok();
}

}  // namespace oans
