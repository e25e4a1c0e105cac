#include "lib/base/tree_ahead.h"

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "lib/base/btrfs_search.h"

namespace oans {
namespace {

// Profiles whose stripe 0 holds a whole copy of the chunk: single, DUP, RAID1 (2, 3, 4
// copies). Striped ones (RAID0, RAID10, RAID5, RAID6) are not mapped here.
constexpr uint64_t kStriped =
    BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID10 | BTRFS_BLOCK_GROUP_RAID5 | BTRFS_BLOCK_GROUP_RAID6;

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
      if (DecodeChunk(it.data, &c) && !(c.type & kStriped) && c.length > 0) chunks_[it.key.offset] = c;
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
  ~Devices() {
    for (auto& [id, dev] : open_)
      if (dev >= 0) sys_.Close(dev);
  }
  Result<int> Get(uint64_t devid) {
    auto it = open_.find(devid);
    if (it != open_.end()) return it->second;
    auto path = sys_.BtrfsDevicePath(fd_, devid);
    if (!path.ok()) return path.status();
    auto dev = sys_.OpenBlockDevice(*path);
    if (!dev.ok()) return dev.status();
    open_[devid] = *dev;
    return *dev;
  }

 private:
  Sys& sys_;
  const int fd_;
  std::map<uint64_t, int> open_;
};

struct Block {
  uint64_t physical;  // on its device, for the order
  uint64_t devid;
  BtrfsNodePtr ptr;   // where it is and the first key below it
};

// Reads the tree block `ptr` points to from its device, checks it is the one meant
// (address, generation, level) and decodes it.
Status ReadNode(Sys& sys, Devices* devices, uint32_t node_size, const Block& b, uint8_t level, BtrfsNode* out) {
  auto dev = devices->Get(b.devid);
  if (!dev.ok()) return dev.status();
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> mem(static_cast<char*>(std::aligned_alloc(4096, node_size)));
  if (!mem) return Status::Io("tree block buffer", ENOMEM);
  auto n = sys.Pread(*dev, mem.get(), node_size, b.physical);
  if (!n.ok()) return n.status();
  if (*n != node_size || !DecodeNode(std::string_view(mem.get(), node_size), out) || out->bytenr != b.ptr.bytenr ||
      out->generation != b.ptr.generation || out->level != level)
    return Status::Corrupt("tree block at " + std::to_string(b.ptr.bytenr) + " is not the one its parent names");
  return Status::Ok();
}

// The leaves of tree `tree_id`, each with its first key, in the order of their places
// on disk: its internal nodes read level by level (each level in disk order too). An
// error when its blocks take more than `budget` bytes.
Status LeavesOnDisk(Sys& sys, int fd, uint64_t tree_id, uint32_t node_size, const ChunkMap& chunks, uint64_t budget,
                    Devices* devices, std::vector<Block>* leaves) {
  BtrfsRootItem root;
  bool found = false;
  BtrfsSearch s;
  s.tree_id = kBtrfsRootTree;
  s.min = {tree_id, kBtrfsRootItem, 0};
  s.max = {tree_id, kBtrfsRootItem, ~uint64_t(0)};
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& it) {
    found = DecodeRootItem(it.data, &root);
    return !found;
  }));
  if (!found) return Status::Invalid("no root item for tree " + std::to_string(tree_id));
  if (root.bytes_used > budget) return Status::Invalid("tree " + std::to_string(tree_id) + " is larger than the budget");
  std::vector<Block> level;
  Block top{0, 0, {BtrfsKey{}, root.bytenr, root.generation}};
  if (!chunks.Map(root.bytenr, node_size, &top.devid, &top.physical))
    return Status::Invalid("the root block of tree " + std::to_string(tree_id) + " is in no mapped chunk");
  level.push_back(top);
  for (int l = root.level; l > 0; --l) {
    std::vector<Block> below;
    for (const Block& b : level) {
      BtrfsNode node;
      OANS_RETURN_IF_ERROR(ReadNode(sys, devices, node_size, b, uint8_t(l), &node));
      for (const BtrfsNodePtr& p : node.ptrs) {
        Block child{0, 0, p};
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
  *leaves = std::move(level);
  return Status::Ok();
}

// Tree `whole.tree_id` read in the order of its leaves on disk: one search per leaf from
// its first key for a single item, so the kernel reads that leaf (and the internal nodes
// above it, with the first search below each) and no other. False, with nothing read,
// when the tree cannot be laid out that way (a striped profile, a device that cannot be
// opened, a block that is not the one its parent names) or is larger than what is left
// of the budget.
Result<bool> ReadOnDisk(Sys& sys, int fd, const BtrfsSearch& whole, uint32_t node_size, const ChunkMap& chunks,
                        Devices* devices, uint64_t budget, TreeAheadStats* stats) {
  std::vector<Block> leaves;
  if (!LeavesOnDisk(sys, fd, whole.tree_id, node_size, chunks, budget - stats->bytes, devices, &leaves).ok())
    return false;
  for (const Block& leaf : leaves) {
    if (whole.max < leaf.ptr.key) continue;
    BtrfsSearch one = whole;
    one.min = std::max(leaf.ptr.key, whole.min);
    one.max_items = 1;
    OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, one, [](const BtrfsItem&) { return true; }));
    stats->bytes += node_size;
    stats->leaves++;
  }
  return true;
}

}  // namespace

Status ReadTreesAhead(Sys& sys, int fd, TreesFor what, uint64_t budget, TreeAheadStats* stats) {
  auto info = sys.BtrfsInfoOf(fd);
  if (!info.ok()) return info.status();
  std::vector<BtrfsSearch> trees(2);
  if (what == TreesFor::kScan) {
    auto id = sys.Identify(fd);
    if (!id.ok()) return id.status();
    trees[0].tree_id = id->subvolume;
    trees[1].tree_id = kBtrfsCsumTree;
    trees[1].min = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 0};
    trees[1].max = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, ~uint64_t(0)};
  } else {
    trees[0].tree_id = kBtrfsExtentTree;
    trees[1].tree_id = kBtrfsFreeSpaceTree;
  }
  ChunkMap chunks;
  const bool mapped = chunks.Load(sys, fd).ok();
  Devices devices(sys, fd);
  for (const BtrfsSearch& s : trees) {
    if (stats->bytes >= budget) {
      stats->cut_short = true;
      break;
    }
    if (mapped && s.tree_id) {
      auto on_disk = ReadOnDisk(sys, fd, s, info->node_size, chunks, &devices, budget, stats);
      if (!on_disk.ok()) return on_disk.status();
      if (*on_disk) {
        stats->on_disk = true;
        continue;
      }
    }
    if (what == TreesFor::kApply) continue;
    // In key order instead: every item of the range, discarded.
    OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
      stats->bytes += item.data.size();
      if (stats->bytes < budget) return true;
      stats->cut_short = true;
      return false;
    }));
  }
  return Status::Ok();
}

}  // namespace oans
