#include "lib/btrfs/tree_layout.h"

#include <endian.h>
#include <linux/btrfs_tree.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>

#include "lib/base/crc32c.h"
#include "lib/btrfs/csum.h"

namespace oans {
namespace {

constexpr uint64_t kNotMapped = BTRFS_BLOCK_GROUP_PROFILE_MASK & ~uint64_t(BTRFS_BLOCK_GROUP_DUP);
constexpr int kMaxLevel = 8;  // BTRFS_MAX_LEVEL

// A tree block's checksum covers all of it past the checksum field, stored little-endian
// at its start. False where it differs, or where oans does not compute the kind.
bool SumMatches(const BtrfsInfo& info, std::string_view block) {
  if (block.size() <= BTRFS_CSUM_SIZE) return false;
  const char* covered = block.data() + BTRFS_CSUM_SIZE;
  const size_t len = block.size() - BTRFS_CSUM_SIZE;
  if (info.csum_type == kBtrfsCsumCrc32c) {
    const uint32_t want = htole32(Crc32c(0, covered, len));
    return std::memcmp(block.data(), &want, sizeof want) == 0;
  }
  if (info.csum_type == kBtrfsCsumXxhash) {
    const uint64_t want = htole64(XXH64(covered, len, 0));
    return std::memcmp(block.data(), &want, sizeof want) == 0;
  }
  return false;
}

// Reads the tree block `b` from its device and checks it (CheckTreeBlock).
Status ReadNode(const TreeReading& r, const TreeBlock& b, uint8_t level, BtrfsNode* out) {
  const uint32_t node_size = r.info.node_size;
  auto dev = r.devices->Get(b.devid);
  if (!dev.ok()) return dev.status();
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> mem(static_cast<char*>(std::aligned_alloc(4096, node_size)));
  if (!mem) return Status::Io("tree block buffer", ENOMEM);
  auto n = r.sys.Pread(*dev, mem.get(), node_size, b.physical);
  if (!n.ok()) return n.status();
  if (*n != node_size) return Status::Corrupt("tree block at " + std::to_string(b.ptr.bytenr) + " read short");
  return CheckTreeBlock(r.info, b, level, std::string_view(mem.get(), node_size), out);
}

bool ByPlace(const TreeBlock& a, const TreeBlock& b) {
  return std::tie(a.devid, a.physical) < std::tie(b.devid, b.physical);
}

}  // namespace

Status ChunkMap::Load(Sys& sys, int fd) {
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

bool ChunkMap::Map(uint64_t logical, uint64_t length, uint64_t* devid, uint64_t* physical) const {
  auto it = chunks_.upper_bound(logical);
  if (it == chunks_.begin()) return false;
  --it;
  const uint64_t into = logical - it->first;
  if (into >= it->second.length || it->second.length - into < length) return false;
  *devid = it->second.devid;
  *physical = it->second.physical + into;
  return true;
}

Result<int> TreeDevices::Get(uint64_t devid) {
  std::lock_guard<std::mutex> hold(mu_);
  auto it = open_.find(devid);
  if (it != open_.end()) return it->second.get();
  auto path = sys_.BtrfsDevicePath(fd_, devid);
  if (!path.ok()) return path.status();
  OANS_ASSIGN_OR_RETURN(Fd dev, Own(sys_, sys_.OpenBlockDevice(*path)));
  return open_.emplace(devid, std::move(dev)).first->second.get();
}

bool TreeSumsComputable(const BtrfsInfo& info) {
  return info.csum_type == kBtrfsCsumCrc32c || info.csum_type == kBtrfsCsumXxhash;
}

Status CheckTreeBlock(const BtrfsInfo& info, const TreeBlock& b, uint8_t level, std::string_view block,
                      BtrfsNode* out) {
  const std::string at = "tree block at " + std::to_string(b.ptr.bytenr);
  if (TreeSumsComputable(info) && !SumMatches(info, block))
    return Status::Corrupt(at + " does not match its checksum");
  if (!DecodeNode(block, out) || out->fsid != info.uuid || out->bytenr != b.ptr.bytenr ||
      out->generation != b.ptr.generation || out->level != level)
    return Status::Corrupt(at + " is not the one its parent names");
  for (size_t i = 1; i < out->ptrs.size(); ++i)
    if (!(out->ptrs[i - 1].key < out->ptrs[i].key)) return Status::Corrupt(at + " has keys out of order");
  // An internal node's keys within the bounds its parent gives it (as the kernel checks).
  if (level > 0 && (out->ptrs.empty() || out->ptrs.front().key < b.ptr.key ||
                    (b.end && !(out->ptrs.back().key < *b.end))))
    return Status::Corrupt(at + " holds keys outside the bounds its parent gives it");
  return Status::Ok();
}

namespace {

// Whether a block whose first key is `k` begins inside an inode: after its inode item,
// the first of its items.
bool BeginsInside(const BtrfsKey& k) { return BtrfsKey{k.objectid, kBtrfsInodeItem, 0} < k; }

// The inodes whose items run between older leaf ptrs[i] and a sibling written since.
std::vector<uint64_t> SharedWithChanged(const std::vector<BtrfsNodePtr>& ptrs, size_t i, uint64_t since) {
  std::vector<uint64_t> shared;
  if (i > 0 && ptrs[i - 1].generation >= since && BeginsInside(ptrs[i].key)) shared.push_back(ptrs[i].key.objectid);
  if (i + 1 < ptrs.size() && ptrs[i + 1].generation >= since && BeginsInside(ptrs[i + 1].key) &&
      (shared.empty() || shared[0] != ptrs[i + 1].key.objectid))
    shared.push_back(ptrs[i + 1].key.objectid);
  return shared;
}

}  // namespace

Status LeavesOnDisk(const TreeReading& r, const BtrfsSearch& range, uint64_t since, uint64_t budget,
                    std::vector<TreeBlock>* leaves, bool* cut, BtrfsKey* cut_at, bool shared) {
  const uint64_t tree_id = range.tree_id;
  const ChunkMap& chunks = r.chunks;
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
  std::vector<TreeBlock> level;
  leaves->clear();
  if (root.generation < since) return Status::Ok();  // nothing written since
  TreeBlock top{0, 0, {BtrfsKey{}, root.bytenr, root.generation}, std::nullopt, {}};
  if (!chunks.Map(root.bytenr, node_size, &top.devid, &top.physical))
    return Status::Invalid("the root block of tree " + std::to_string(tree_id) + " is in no mapped chunk");
  level.push_back(top);
  for (int l = root.level; l > 0; --l) {
    std::vector<TreeBlock> below;
    for (const TreeBlock& b : level) {
      if (r.stop && r.stop()) return Status::Interrupted("stopped");
      BtrfsNode node;
      OANS_RETURN_IF_ERROR(ReadNode(r, b, uint8_t(l), &node));
      if (below.size() + node.ptrs.size() > most_blocks)
        return Status::Corrupt("tree " + std::to_string(tree_id) + " has more blocks than its root item says");
      for (size_t i = 0; i < node.ptrs.size(); ++i) {
        const BtrfsNodePtr& p = node.ptrs[i];
        TreeBlock child{0, 0, p, i + 1 < node.ptrs.size() ? std::optional(node.ptrs[i + 1].key) : b.end, {}};
        if (p.generation < since) {  // copy on write: nothing below it changed
          if (!shared || l > 1) continue;
          child.shared = SharedWithChanged(node.ptrs, i, since);
          std::erase_if(child.shared, [&](uint64_t ino) { return ino < range.min.objectid || ino > range.max.objectid; });
          if (child.shared.empty()) continue;
        }
        if (range.max < p.key || (child.end && !(range.min < *child.end))) continue;  // outside the range
        const bool mapped = chunks.Map(p.bytenr, node_size, &child.devid, &child.physical);
        if (!mapped && !child.shared.empty()) continue;  // an older leaf: the search reads that inode
        if (!mapped) return Status::Invalid("a block of tree " + std::to_string(tree_id) + " is in no mapped chunk");
        below.push_back(child);
      }
    }
    std::sort(below.begin(), below.end(), ByPlace);
    level = std::move(below);
  }
  const size_t fit = budget / std::max<uint32_t>(node_size, 1);
  if (level.size() > fit) {
    auto by_key = [](const TreeBlock& a, const TreeBlock& b) { return a.ptr.key < b.ptr.key; };
    std::nth_element(level.begin(), level.begin() + fit, level.end(), by_key);
    *cut_at = level[fit].ptr.key;
    level.resize(fit);
    std::sort(level.begin(), level.end(), ByPlace);
    *cut = true;
  }
  *leaves = std::move(level);
  return Status::Ok();
}

}  // namespace oans
