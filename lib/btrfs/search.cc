#include "lib/btrfs/search.h"

#include <endian.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace oans {
namespace {

template <typename T>
T Le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (sizeof(T) == 8) return T(le64toh(uint64_t(v)));
  else if constexpr (sizeof(T) == 4) return T(le32toh(uint32_t(v)));
  else if constexpr (sizeof(T) == 2) return T(le16toh(uint16_t(v)));
  else return v;
}

int64_t TimeNs(const char* p) {
  return int64_t(Le<uint64_t>(p + offsetof(btrfs_timespec, sec))) * 1000000000 +
         int64_t(Le<uint32_t>(p + offsetof(btrfs_timespec, nsec)));
}

std::string Uuid(const uint8_t* u) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

// A key as a tree holds it.
BtrfsKey KeyAt(const char* p) {
  return {Le<uint64_t>(p + offsetof(btrfs_disk_key, objectid)), uint8_t(p[offsetof(btrfs_disk_key, type)]),
          Le<uint64_t>(p + offsetof(btrfs_disk_key, offset))};
}

// struct btrfs_header and struct btrfs_key_ptr, which the uapi headers leave out, as the
// kernel lays them out (fs/btrfs/accessors.h): packed, little-endian, like every item.
struct DiskHeader {
  uint8_t csum[BTRFS_CSUM_SIZE];
  uint8_t fsid[BTRFS_FSID_SIZE];
  uint64_t bytenr, flags;
  uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
  uint64_t generation, owner;
  uint32_t nritems;
  uint8_t level;
} __attribute__((packed));
struct DiskKeyPtr {
  btrfs_disk_key key;
  uint64_t blockptr, generation;
} __attribute__((packed));
struct DiskItem {  // where its data is: from the end of the header
  btrfs_disk_key key;
  uint32_t offset, size;
} __attribute__((packed));
static_assert(sizeof(DiskHeader) == 101 && sizeof(DiskKeyPtr) == 33 && sizeof(DiskItem) == 25, "the kernel's layout");
static_assert(sizeof(btrfs_disk_key) == 17);

}  // namespace

// The item types and tree ids this file names, as the kernel's headers have them.
static_assert(kBtrfsInodeItem == BTRFS_INODE_ITEM_KEY && kBtrfsInodeRef == BTRFS_INODE_REF_KEY &&
              kBtrfsInodeExtref == BTRFS_INODE_EXTREF_KEY && kBtrfsXattrItem == BTRFS_XATTR_ITEM_KEY &&
              kBtrfsDirItem == BTRFS_DIR_ITEM_KEY && kBtrfsDirIndex == BTRFS_DIR_INDEX_KEY &&
              kBtrfsExtentData == BTRFS_EXTENT_DATA_KEY && kBtrfsExtentCsum == BTRFS_EXTENT_CSUM_KEY &&
              kBtrfsRootItem == BTRFS_ROOT_ITEM_KEY && kBtrfsRootBackref == BTRFS_ROOT_BACKREF_KEY &&
              kBtrfsRootRef == BTRFS_ROOT_REF_KEY && kBtrfsChunkItem == BTRFS_CHUNK_ITEM_KEY);
static_assert(kBtrfsRootTree == BTRFS_ROOT_TREE_OBJECTID && kBtrfsExtentTree == BTRFS_EXTENT_TREE_OBJECTID &&
              kBtrfsChunkTree == BTRFS_CHUNK_TREE_OBJECTID && kBtrfsFsTree == BTRFS_FS_TREE_OBJECTID &&
              kBtrfsCsumTree == BTRFS_CSUM_TREE_OBJECTID && kBtrfsFreeSpaceTree == BTRFS_FREE_SPACE_TREE_OBJECTID &&
              kBtrfsFirstChunkTreeObjectid == BTRFS_FIRST_CHUNK_TREE_OBJECTID &&
              kBtrfsExtentCsumObjectid == uint64_t(BTRFS_EXTENT_CSUM_OBJECTID));

bool BtrfsKey::Next(BtrfsKey* next) const {
  *next = *this;
  if (offset < ~uint64_t(0)) {
    next->offset++;
  } else if (type < 255) {
    next->type++;
    next->offset = 0;
  } else if (objectid < ~uint64_t(0)) {
    next->objectid++;
    next->type = 0;
    next->offset = 0;
  } else {
    return false;
  }
  return true;
}

Status BtrfsTreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit) {
  // One call returns whole items; an item is smaller than a leaf (at most 64 KiB). The
  // buffer is the thread's own, kept between calls and never cleared: the kernel writes
  // what it returns, and nothing past that is read.
  constexpr size_t kMaxItem = 64 * 1024;
  const size_t kBuffer = std::clamp<size_t>(search.buffer_bytes, 256 * 1024, 16 << 20);
  const uint32_t kItemsPerCall = uint32_t(kBuffer / 64);
  thread_local std::unique_ptr<uint64_t[]> mem;
  thread_local size_t mem_bytes = 0;
  if (mem_bytes < kBuffer) {
    mem.reset(new uint64_t[(sizeof(btrfs_ioctl_search_args_v2) + kBuffer + 7) / 8]);
    mem_bytes = kBuffer;
  }
  auto* args = reinterpret_cast<btrfs_ioctl_search_args_v2*>(mem.get());
  const char* buf = reinterpret_cast<const char*>(args->buf);
  BtrfsKey from = search.min;
  uint32_t left = search.max_items;  // when limited
  while (!(search.max < from)) {
    btrfs_ioctl_search_key& key = args->key;
    std::memset(&key, 0, sizeof key);
    key.tree_id = search.tree_id;
    key.min_objectid = from.objectid;
    key.min_type = from.type;
    key.min_offset = from.offset;
    key.max_objectid = search.max.objectid;
    key.max_type = search.max.type;
    key.max_offset = search.max.offset;
    key.min_transid = search.min_transid;
    key.max_transid = search.max_transid;
    const uint32_t asked = search.max_items ? std::min(left, kItemsPerCall) : kItemsPerCall;
    key.nr_items = asked;
    args->buf_size = kBuffer;
    if (::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) != 0) return Status::Io("BTRFS_IOC_TREE_SEARCH_V2", errno);
    if (key.nr_items == 0) break;
    size_t off = 0;
    BtrfsKey last;
    for (uint32_t i = 0; i < key.nr_items; ++i) {
      btrfs_ioctl_search_header h;
      if (off + sizeof h > kBuffer) return Status::Corrupt("BTRFS_IOC_TREE_SEARCH_V2: result overruns its buffer");
      std::memcpy(&h, buf + off, sizeof h);
      off += sizeof h;
      if (off + h.len > kBuffer) return Status::Corrupt("BTRFS_IOC_TREE_SEARCH_V2: item overruns its buffer");
      BtrfsItem item;
      item.key = {h.objectid, uint8_t(h.type), h.offset};
      item.transid = h.transid;
      item.data = std::string_view(buf + off, h.len);
      off += h.len;
      last = item.key;
      if (!visit(item)) return Status::Ok();
    }
    // The kernel stops a call at the item count, at an item that does not fit the buffer,
    // or past the last key: with fewer items and room for any item left, it found all.
    if (key.nr_items < asked && kBuffer - off >= kMaxItem + sizeof(btrfs_ioctl_search_header)) break;
    if (search.max_items && (left -= key.nr_items) == 0) break;
    if (!last.Next(&from)) break;
  }
  return Status::Ok();
}

Result<BtrfsInfo> BtrfsInfoOf(int fd) {
  btrfs_ioctl_fs_info_args a;
  std::memset(&a, 0, sizeof a);
  a.flags = BTRFS_FS_INFO_FLAG_CSUM_INFO | BTRFS_FS_INFO_FLAG_GENERATION;
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &a) != 0) return Status::Io("BTRFS_IOC_FS_INFO", errno);
  if (!(a.flags & BTRFS_FS_INFO_FLAG_CSUM_INFO))
    return Status::Invalid("BTRFS_IOC_FS_INFO: the kernel does not report the checksum type");
  BtrfsInfo info;
  info.csum_type = a.csum_type;
  info.csum_size = a.csum_size;
  info.sector_size = a.sectorsize;
  info.node_size = a.nodesize;
  info.generation = (a.flags & BTRFS_FS_INFO_FLAG_GENERATION) ? a.generation : 0;
  info.uuid = Uuid(a.fsid);
  return info;
}

BtrfsIdentity BtrfsIdentityOf(int fd) {
  BtrfsIdentity id;
  btrfs_ioctl_fs_info_args info;
  std::memset(&info, 0, sizeof info);
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &info) == 0) {
    id.uuid = Uuid(info.fsid);
    id.sector_size = info.sectorsize;
  }
  btrfs_ioctl_ino_lookup_args look;
  std::memset(&look, 0, sizeof look);
  look.objectid = BTRFS_FIRST_FREE_OBJECTID;
  if (::ioctl(fd, BTRFS_IOC_INO_LOOKUP, &look) == 0) id.subvolume = look.treeid;
  btrfs_ioctl_get_subvol_info_args sub;
  std::memset(&sub, 0, sizeof sub);
  // Success is any answer but -1: Linux 6.18 answers 1 for every subvolume but the
  // top one, with the fields filled.
  if (::ioctl(fd, BTRFS_IOC_GET_SUBVOL_INFO, &sub) >= 0) {
    id.subvolume_uuid = Uuid(sub.uuid);
    id.generation = sub.generation;
    id.read_only = sub.flags & BTRFS_ROOT_SUBVOL_RDONLY;
    const bool snapshot = std::any_of(std::begin(sub.parent_uuid), std::end(sub.parent_uuid), [](auto b) { return b != 0; });
    if (snapshot) id.parent_uuid = Uuid(sub.parent_uuid);
    id.created = sub.otransid;
  }
  return id;
}

Status BtrfsChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) {
  inodes->clear();
  BtrfsSearch search;
  search.min = {first, 0, 0};
  search.max = {last, 255, ~uint64_t(0)};
  search.min_transid = since;
  OANS_RETURN_IF_ERROR(BtrfsTreeSearch(fd, search, [&](const BtrfsItem& item) {
    if (item.transid >= since && (item.key.type == kBtrfsInodeItem || item.key.type == kBtrfsExtentData) &&
        (inodes->empty() || inodes->back() != item.key.objectid))
      inodes->push_back(item.key.objectid);
    return true;
  }));
  std::sort(inodes->begin(), inodes->end());
  inodes->erase(std::unique(inodes->begin(), inodes->end()), inodes->end());
  return Status::Ok();
}

static_assert(kBtrfsFirstInode == BTRFS_FIRST_FREE_OBJECTID && kBtrfsLastInode == uint64_t(BTRFS_LAST_FREE_OBJECTID));

Result<std::string> BtrfsDirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino) {
  btrfs_ioctl_ino_lookup_args a;
  std::memset(&a, 0, sizeof a);
  a.treeid = tree_id;
  a.objectid = dir_ino;
  if (::ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) != 0) return Status::Io("BTRFS_IOC_INO_LOOKUP", errno);
  a.name[sizeof a.name - 1] = 0;
  std::string path(a.name);
  if (!path.empty() && path.back() == '/') path.pop_back();
  return path;
}

Result<std::string> BtrfsDevicePath(int fd, uint64_t devid) {
  auto a = std::make_unique<btrfs_ioctl_dev_info_args>();
  std::memset(a.get(), 0, sizeof *a);
  a->devid = devid;
  if (::ioctl(fd, BTRFS_IOC_DEV_INFO, a.get()) != 0) return Status::Io("BTRFS_IOC_DEV_INFO", errno);
  a->path[sizeof a->path - 1] = 0;
  return std::string(reinterpret_cast<const char*>(a->path));
}

bool DecodeRootItem(std::string_view d, BtrfsRootItem* out) {
  if (d.size() < offsetof(btrfs_root_item, level) + 1) return false;
  const char* p = d.data();
  out->generation = Le<uint64_t>(p + offsetof(btrfs_root_item, generation));
  out->bytenr = Le<uint64_t>(p + offsetof(btrfs_root_item, bytenr));
  out->bytes_used = Le<uint64_t>(p + offsetof(btrfs_root_item, bytes_used));
  out->level = uint8_t(p[offsetof(btrfs_root_item, level)]);
  return true;
}

bool DecodeRootRef(std::string_view d, BtrfsRootRef* out) {
  if (d.size() < sizeof(btrfs_root_ref)) return false;
  const char* p = d.data();
  out->dirid = Le<uint64_t>(p + offsetof(btrfs_root_ref, dirid));
  const uint16_t n = Le<uint16_t>(p + offsetof(btrfs_root_ref, name_len));
  if (d.size() - sizeof(btrfs_root_ref) < n) return false;
  out->name = d.substr(sizeof(btrfs_root_ref), n);
  return true;
}

bool DecodeChunk(std::string_view d, BtrfsChunk* out) {
  if (d.size() < sizeof(btrfs_chunk)) return false;  // holds stripe 0
  const char* p = d.data();
  out->length = Le<uint64_t>(p + offsetof(btrfs_chunk, length));
  out->type = Le<uint64_t>(p + offsetof(btrfs_chunk, type));
  out->num_stripes = Le<uint16_t>(p + offsetof(btrfs_chunk, num_stripes));
  out->devid = Le<uint64_t>(p + offsetof(btrfs_chunk, stripe) + offsetof(btrfs_stripe, devid));
  out->physical = Le<uint64_t>(p + offsetof(btrfs_chunk, stripe) + offsetof(btrfs_stripe, offset));
  return out->num_stripes > 0 && d.size() >= sizeof(btrfs_chunk) + (out->num_stripes - 1u) * sizeof(btrfs_stripe);
}

bool DecodeNode(std::string_view d, BtrfsNode* out) {
  if (d.size() < sizeof(DiskHeader)) return false;
  const char* p = d.data();
  out->fsid = Uuid(reinterpret_cast<const uint8_t*>(p + offsetof(DiskHeader, fsid)));
  out->bytenr = Le<uint64_t>(p + offsetof(DiskHeader, bytenr));
  out->generation = Le<uint64_t>(p + offsetof(DiskHeader, generation));
  out->owner = Le<uint64_t>(p + offsetof(DiskHeader, owner));
  const uint32_t n = Le<uint32_t>(p + offsetof(DiskHeader, nritems));
  out->level = uint8_t(p[offsetof(DiskHeader, level)]);
  out->ptrs.clear();
  if (out->level == 0) return true;
  if (n > (d.size() - sizeof(DiskHeader)) / sizeof(DiskKeyPtr)) return false;
  out->ptrs.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const char* k = p + sizeof(DiskHeader) + i * sizeof(DiskKeyPtr);
    BtrfsNodePtr ptr;
    ptr.key = KeyAt(k + offsetof(DiskKeyPtr, key));
    ptr.bytenr = Le<uint64_t>(k + offsetof(DiskKeyPtr, blockptr));
    ptr.generation = Le<uint64_t>(k + offsetof(DiskKeyPtr, generation));
    out->ptrs.push_back(ptr);
  }
  return true;
}

bool DecodeLeafItems(std::string_view d, uint64_t generation, std::vector<BtrfsItem>* out) {
  out->clear();
  const size_t room = d.size() - std::min(d.size(), sizeof(DiskHeader));
  const uint32_t n = room ? Le<uint32_t>(d.data() + offsetof(DiskHeader, nritems)) : 0;
  if (room == 0 || n > room / sizeof(DiskItem)) return false;
  const char* items = d.data() + sizeof(DiskHeader);
  for (uint32_t i = 0; i < n; ++i) {
    const char* it = items + i * sizeof(DiskItem);
    const uint32_t at = Le<uint32_t>(it + offsetof(DiskItem, offset));
    const uint32_t size = Le<uint32_t>(it + offsetof(DiskItem, size));
    if (at < n * sizeof(DiskItem) || at > room || size > room - at) return false;  // past the headers, in the block
    BtrfsItem item{KeyAt(it + offsetof(DiskItem, key)), generation, std::string_view(items + at, size)};
    if (!out->empty() && !(out->back().key < item.key)) return false;  // keys in order
    out->push_back(item);
  }
  return true;
}

bool DecodeInodeItem(std::string_view d, BtrfsInodeItem* out) {
  if (d.size() < sizeof(btrfs_inode_item)) return false;
  const char* p = d.data();
  out->generation = Le<uint64_t>(p + offsetof(btrfs_inode_item, generation));
  out->transid = Le<uint64_t>(p + offsetof(btrfs_inode_item, transid));
  out->size = Le<uint64_t>(p + offsetof(btrfs_inode_item, size));
  out->nbytes = Le<uint64_t>(p + offsetof(btrfs_inode_item, nbytes));
  out->nlink = Le<uint32_t>(p + offsetof(btrfs_inode_item, nlink));
  out->uid = Le<uint32_t>(p + offsetof(btrfs_inode_item, uid));
  out->gid = Le<uint32_t>(p + offsetof(btrfs_inode_item, gid));
  out->mode = Le<uint32_t>(p + offsetof(btrfs_inode_item, mode));
  out->flags = Le<uint64_t>(p + offsetof(btrfs_inode_item, flags));
  out->mtime_ns = TimeNs(p + offsetof(btrfs_inode_item, mtime));
  out->ctime_ns = TimeNs(p + offsetof(btrfs_inode_item, ctime));
  return true;
}

bool DecodeInodeRefs(std::string_view d, const std::function<void(std::string_view)>& visit) {
  size_t off = 0;
  while (off < d.size()) {
    if (off + sizeof(btrfs_inode_ref) > d.size()) return false;
    const uint16_t len = Le<uint16_t>(d.data() + off + offsetof(btrfs_inode_ref, name_len));
    off += sizeof(btrfs_inode_ref);
    if (off + len > d.size()) return false;
    visit(d.substr(off, len));
    off += len;
  }
  return true;
}

bool DecodeInodeExtrefs(std::string_view d, const std::function<void(uint64_t, std::string_view)>& visit) {
  size_t off = 0;
  while (off < d.size()) {
    if (off + sizeof(btrfs_inode_extref) > d.size()) return false;
    const char* p = d.data() + off;
    const uint64_t parent = Le<uint64_t>(p + offsetof(btrfs_inode_extref, parent_objectid));
    const uint16_t len = Le<uint16_t>(p + offsetof(btrfs_inode_extref, name_len));
    off += sizeof(btrfs_inode_extref);
    if (off + len > d.size()) return false;
    visit(parent, d.substr(off, len));
    off += len;
  }
  return true;
}

bool DecodeDirItems(std::string_view d, const std::function<void(const BtrfsDirEntry&)>& visit) {
  size_t off = 0;
  while (off < d.size()) {
    if (off + sizeof(btrfs_dir_item) > d.size()) return false;
    const char* p = d.data() + off;
    BtrfsDirEntry e;
    e.location = KeyAt(p + offsetof(btrfs_dir_item, location));
    e.type = uint8_t(p[offsetof(btrfs_dir_item, type)]);
    const uint16_t name_len = Le<uint16_t>(p + offsetof(btrfs_dir_item, name_len));
    const uint16_t data_len = Le<uint16_t>(p + offsetof(btrfs_dir_item, data_len));
    off += sizeof(btrfs_dir_item);
    if (off + name_len + data_len > d.size()) return false;
    e.name = d.substr(off, name_len);
    off += size_t(name_len) + data_len;
    visit(e);
  }
  return true;
}

bool DecodeFileExtent(std::string_view d, BtrfsFileExtent* out) {
  const size_t fixed = offsetof(btrfs_file_extent_item, disk_bytenr);
  if (d.size() < fixed) return false;
  const char* p = d.data();
  out->generation = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, generation));
  out->ram_bytes = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, ram_bytes));
  out->compression = uint8_t(p[offsetof(btrfs_file_extent_item, compression)]);
  out->type = uint8_t(p[offsetof(btrfs_file_extent_item, type)]);
  if (out->type == BTRFS_FILE_EXTENT_INLINE) {
    out->inline_data = d.substr(fixed);
    return true;
  }
  if (d.size() < sizeof(btrfs_file_extent_item)) return false;
  out->disk_bytenr = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, disk_bytenr));
  out->disk_num_bytes = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, disk_num_bytes));
  out->offset = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, offset));
  out->num_bytes = Le<uint64_t>(p + offsetof(btrfs_file_extent_item, num_bytes));
  return true;
}

}  // namespace oans
