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

#include "lib/btrfs/search.h"
#include "lib/btrfs/tree_layout.h"

namespace oans {
namespace {

// A leaf to read and the search of its tree (its key range).
struct LeafRead {
  TreeBlock leaf;
  const BtrfsSearch* tree;
};

// Adds the leaves of tree `whole.tree_id` to *reads, each with its first key. False, with
// nothing added, when the tree cannot be laid out that way (a striped profile, a device
// that cannot be opened, a block that is not the one its parent names) or is larger than
// `budget` (with `since`: its blocks written since are cut to the budget, *cut set,
// *cut_at where).
bool LayOut(const TreeReading& r, const BtrfsSearch& whole, uint64_t since, uint64_t budget,
            std::vector<LeafRead>* reads, bool* cut, BtrfsKey* cut_at) {
  std::vector<TreeBlock> leaves;
  if (!LeavesOnDisk(r, whole, since, budget, &leaves, cut, cut_at).ok()) return false;
  for (const TreeBlock& leaf : leaves) reads->push_back({leaf, &whole});
  return true;
}

// The leaves of every tree laid out, in one pass in the order of their places on disk
// (the trees' leaves lie among each other's, so a pass per tree would cross the metadata
// once per tree): one search per leaf from its first key for a single item, so the kernel
// reads that leaf (and the internal nodes above it, with the first search below each)
// and no other. `readers` threads each take the next leaf; the first error ends them all.
Status ReadInDiskOrder(const TreeReading& r, std::vector<LeafRead>& reads, int readers, TreeAheadStats* stats) {
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
Status ReadInKeyOrder(const TreeReading& r, const BtrfsSearch& s, uint64_t budget, TreeAheadStats* stats) {
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
  TreeDevices devices(sys, fd);
  const TreeReading r{sys, fd, *info, chunks, &devices, stop};
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
