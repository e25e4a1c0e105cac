#include "lib/btrfs/tree_map.h"

#include <dirent.h>
#include <linux/btrfs_tree.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include <algorithm>
#include <memory>

namespace oans {
namespace {

constexpr uint64_t kSector = 4096;
constexpr uint32_t kNotAligned = FIEMAP_EXTENT_NOT_ALIGNED;
constexpr uint8_t kInline = BTRFS_FILE_EXTENT_INLINE, kRegular = BTRFS_FILE_EXTENT_REG,
                  kPrealloc = BTRFS_FILE_EXTENT_PREALLOC;

// BTRFS_INODE_* flags of an inode item (fs/btrfs/btrfs_inode.h; not in the uapi headers).
constexpr uint64_t kBtrfsInodeNodatacow = 1u << 1, kBtrfsInodeNocompress = 1u << 3, kBtrfsInodeSync = 1u << 5,
                   kBtrfsInodeImmutable = 1u << 6, kBtrfsInodeAppend = 1u << 7, kBtrfsInodeNodump = 1u << 8,
                   kBtrfsInodeNoatime = 1u << 9, kBtrfsInodeDirsync = 1u << 10, kBtrfsInodeCompress = 1u << 11,
                   kBtrfsInodeVerity = uint64_t(1) << 32;  // ro_flags, shifted up

uint64_t RoundUp(uint64_t x) { return (x + kSector - 1) / kSector * kSector; }

}  // namespace

bool TreeMapBuilder::Add(const BtrfsItem& it) {
  if (it.key.type == kBtrfsInodeItem) return have_inode_ = DecodeInodeItem(it.data, &map_.inode);
  if (it.key.type != kBtrfsExtentData) return true;  // refs, xattrs, directory items
  BtrfsFileExtent x;
  if (!have_inode_ || !DecodeFileExtent(it.data, &x)) return false;
  ++items_;
  const uint64_t at = it.key.offset;
  if (x.type == kInline) {
    last_end_ = RoundUp(at + x.ram_bytes);
    Emit(at, 0, last_end_ - at, kExtentInline | kNotAligned | (x.compression ? kExtentEncoded : 0));
    if (!x.compression && at == 0 && x.inline_data.size() == x.ram_bytes) map_.inline_data.assign(x.inline_data);
    ++inline_items_;
    return true;
  }
  if (x.type != kRegular && x.type != kPrealloc) return false;
  if (x.disk_bytenr == 0) return true;  // an explicit hole: FIEMAP's last extent is the one before
  last_end_ = at + x.num_bytes;
  uint32_t flags = x.type == kPrealloc ? kExtentUnwritten : 0;
  if (x.compression) flags |= kExtentEncoded;
  Emit(at, x.disk_bytenr + (x.compression ? 0 : x.offset), x.num_bytes, flags);
  return true;
}

bool TreeMapBuilder::Finish(TreeMap* out) {
  if (!have_inode_) return false;
  // The inline data stands for the file only when it is all of it.
  if (inline_items_ != 1 || items_ != 1 || map_.inline_data.size() != map_.inode.size) map_.inline_data.clear();
  auto& x = map_.extents;
  if (!x.empty() && x.back().logical + x.back().length >= last_end_) x.back().flags |= kExtentLast;
  map_.inode_flags = FsFlagsOfBtrfs(map_.inode.flags);
  *out = std::move(map_);
  return true;
}

// As btrfs's emit_fiemap_extent: merged into the previous extent when both are
// contiguous in the file and on disk and their flags are the same.
void TreeMapBuilder::Emit(uint64_t logical, uint64_t physical, uint64_t length, uint32_t flags) {
  auto& x = map_.extents;
  if (!x.empty()) {
    FiemapExtent& p = x.back();
    if (p.logical + p.length == logical && p.physical + p.length == physical && p.flags == flags) {
      p.length += length;
      return;
    }
  }
  x.push_back({logical, physical, length, flags});
}

FileStat TreeMap::Stat(uint64_t dev) const {
  FileStat st;
  st.dev = dev;
  st.ino = ino;
  st.size = inode.size;
  st.mtime_ns = inode.mtime_ns;
  st.ctime_ns = inode.ctime_ns;
  st.mode = inode.mode;
  st.nlink = inode.nlink;
  st.uid = inode.uid;
  st.gid = inode.gid;
  st.blocks = inode.nbytes / 512;
  return st;
}

uint32_t FsFlagsOfBtrfs(uint64_t f) {
  // fs/btrfs/ioctl.c, btrfs_inode_flags_to_fsflags; read-only flags in the upper half.
  uint32_t out = 0;
  if (f & kBtrfsInodeSync) out |= FS_SYNC_FL;
  if (f & kBtrfsInodeImmutable) out |= FS_IMMUTABLE_FL;
  if (f & kBtrfsInodeAppend) out |= FS_APPEND_FL;
  if (f & kBtrfsInodeNodump) out |= FS_NODUMP_FL;
  if (f & kBtrfsInodeNoatime) out |= FS_NOATIME_FL;
  if (f & kBtrfsInodeDirsync) out |= FS_DIRSYNC_FL;
  if (f & kBtrfsInodeNodatacow) out |= FS_NOCOW_FL;
  if (f & kBtrfsInodeVerity) out |= FS_VERITY_FL;
  if (f & kBtrfsInodeNocompress) out |= FS_NOCOMP_FL;
  else if (f & kBtrfsInodeCompress) out |= FS_COMPR_FL;
  return out;
}

Result<bool> MapFromTree(BtrfsSys& sys, int dirfd, uint64_t ino, TreeMap* out) {
  BtrfsSearch s;
  s.tree_id = 0;  // the directory's subvolume: a regular file lies in its directory's
  s.min = {ino, kBtrfsInodeItem, 0};
  s.max = {ino, kBtrfsExtentData, ~uint64_t(0)};
  TreeMapBuilder b(ino);
  bool usable = true;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(dirfd, s, [&](const BtrfsItem& it) {
    return it.key.objectid == ino && (usable = b.Add(it));
  }));
  return usable && b.Finish(out);
}

Status MapManyFromTree(BtrfsSys& sys, int dirfd, const std::vector<uint64_t>& inos, uint64_t max_items,
                       std::vector<TreeMap>* out) {
  out->clear();
  if (inos.empty()) return Status::Ok();
  BtrfsSearch s;
  s.tree_id = 0;
  s.min = {inos.front(), kBtrfsInodeItem, 0};
  s.max = {inos.back(), kBtrfsExtentData, ~uint64_t(0)};
  size_t next = 0;  // inos[next] is the first not yet passed
  std::unique_ptr<TreeMapBuilder> b;
  bool usable = false;
  uint64_t items = 0;
  auto end_inode = [&] {
    TreeMap m;
    if (b && usable && b->Finish(&m)) out->push_back(std::move(m));
    b.reset();
  };
  OANS_RETURN_IF_ERROR(sys.TreeSearch(dirfd, s, [&](const BtrfsItem& it) {
    if (++items > max_items) return false;
    if (b && it.key.objectid != b->ino()) end_inode();
    if (!b) {
      while (next < inos.size() && inos[next] < it.key.objectid) ++next;
      if (next == inos.size()) return false;
      if (inos[next] != it.key.objectid) return true;  // another inode's item
      b = std::make_unique<TreeMapBuilder>(it.key.objectid);
      usable = true;
      ++next;
    }
    if (usable) usable = b->Add(it);
    return true;
  }));
  if (items <= max_items) end_inode();  // the search ended after the last inode's items
  return Status::Ok();
}

void BatchMaps::Clear() {
  dirfd_ = -1;
  maps_.clear();
  taken_.clear();
}

void BatchMaps::Map(BtrfsSys& sys, int dirfd, const std::vector<DirEntry>& batch) {
  constexpr uint64_t kInodeGap = 64;
  Clear();
  std::vector<uint64_t> inos;
  for (const auto& d : batch)
    if (d.type == DT_REG) inos.push_back(d.ino);
  if (inos.size() < 2) return;
  std::sort(inos.begin(), inos.end());
  inos.erase(std::unique(inos.begin(), inos.end()), inos.end());
  std::vector<uint64_t> run;
  std::vector<TreeMap> found;
  for (size_t i = 0; i <= inos.size(); ++i) {
    if (i < inos.size() && (run.empty() || inos[i] - run.back() <= kInodeGap)) {
      run.push_back(inos[i]);
      continue;
    }
    if (run.size() > 1 && MapManyFromTree(sys, dirfd, run, 16 * run.size() + 64, &found).ok())
      for (auto& m : found) maps_.push_back(std::move(m));
    run.clear();
    if (i < inos.size()) run.push_back(inos[i]);
  }
  taken_.assign(maps_.size(), false);
  dirfd_ = dirfd;
}

bool BatchMaps::Take(BtrfsSys& sys, int dirfd, uint64_t ino, TreeMap* out) {
  if (dirfd == dirfd_) {
    auto it = std::lower_bound(maps_.begin(), maps_.end(), ino, [](const TreeMap& m, uint64_t i) { return m.ino < i; });
    if (it != maps_.end() && it->ino == ino && !taken_[it - maps_.begin()]) {
      *out = std::move(*it);
      taken_[it - maps_.begin()] = true;  // left in place: erasing would move the rest
      return true;
    }
  }
  auto found = MapFromTree(sys, dirfd, ino, out);
  return found.ok() && *found;
}

}  // namespace oans
