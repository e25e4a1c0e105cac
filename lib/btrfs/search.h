// btrfs tree searches: the items of a btrfs tree in key order (BTRFS_IOC_TREE_SEARCH_V2),
// the filesystem's checksum facts (BTRFS_IOC_FS_INFO) and the path of a directory inode
// (BTRFS_IOC_INO_LOOKUP), with the few item layouts oans reads decoded from their
// little-endian on-disk form. Every call needs CAP_SYS_ADMIN and works on a descriptor of
// any file or directory of the filesystem; all are safe to call from several threads.
// Callers go through Sys (TreeSearch, BtrfsInfo, DirectoryPath), so tests can inject.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// A btrfs key: compared as one compound value (objectid, type, offset).
struct BtrfsKey {
  uint64_t objectid = 0;
  uint8_t type = 0;
  uint64_t offset = 0;
  bool operator<(const BtrfsKey& o) const {
    return std::tie(objectid, type, offset) < std::tie(o.objectid, o.type, o.offset);
  }
  bool operator==(const BtrfsKey& o) const = default;
  // The next key, or false past the last one.
  bool Next(BtrfsKey* next) const;
};

inline constexpr BtrfsKey kBtrfsKeyMax{~uint64_t(0), 255, ~uint64_t(0)};

// Item types and trees used (linux/btrfs_tree.h).
inline constexpr uint8_t kBtrfsInodeItem = 1, kBtrfsInodeRef = 12, kBtrfsInodeExtref = 13, kBtrfsXattrItem = 24,
                         kBtrfsDirItem = 84, kBtrfsDirIndex = 96, kBtrfsExtentData = 108, kBtrfsExtentCsum = 128,
                         kBtrfsRootItem = 132, kBtrfsRootBackref = 144, kBtrfsRootRef = 156;
inline constexpr uint8_t kBtrfsChunkItem = 228;
inline constexpr uint64_t kBtrfsRootTree = 1, kBtrfsExtentTree = 2, kBtrfsChunkTree = 3, kBtrfsFsTree = 5,
                          kBtrfsCsumTree = 7, kBtrfsFreeSpaceTree = 10;
inline constexpr uint64_t kBtrfsFirstChunkTreeObjectid = 256;
inline constexpr uint64_t kBtrfsExtentCsumObjectid = ~uint64_t(0) - 9;  // -10

// One search: the items of tree `tree_id` (0: the subvolume of the descriptor) with keys
// in [min, max], from tree blocks written in a transaction in [min_transid, max_transid].
struct BtrfsSearch {
  uint64_t tree_id = 0;
  BtrfsKey min, max = kBtrfsKeyMax;
  uint64_t min_transid = 0, max_transid = ~uint64_t(0);
  // Stop after this many items (0: no limit). The kernel is asked for no more, so it
  // reads no tree block past the one holding the last of them.
  uint32_t max_items = 0;
  // Bytes a call may return: more for a search expected to return much (fewer calls),
  // at most 16 MiB (the kernel's limit). Each thread keeps the largest it used.
  uint32_t buffer_bytes = 256 * 1024;
};

// One item found. `transid` is the generation of the tree block holding it; `data`
// points into the search buffer and is valid only during the callback.
struct BtrfsItem {
  BtrfsKey key;
  uint64_t transid = 0;
  std::string_view data;
};

// Returns false to stop the search early (not an error).
using BtrfsVisitor = std::function<bool(const BtrfsItem&)>;

// Calls `visit` for every item of the search, in key order.
Status BtrfsTreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit);

// The filesystem's checksum type (0 crc32c, 1 xxhash64, 2 sha256, 3 blake2) and size, its
// sector size and current generation.
struct BtrfsInfo {
  uint16_t csum_type = 0;
  uint16_t csum_size = 4;
  uint32_t sector_size = 4096;
  uint32_t node_size = 16384;  // bounds how many sectors one checksum item covers
  uint64_t generation = 0;
  std::string uuid;
};
Result<BtrfsInfo> BtrfsInfoOf(int fd);

// What identifies a btrfs filesystem and the subvolume of fd, each part empty (0) when
// its ioctl fails: the filesystem's UUID and sector size (BTRFS_IOC_FS_INFO), the
// subvolume's id (BTRFS_IOC_INO_LOOKUP), and its UUID and generation
// (BTRFS_IOC_GET_SUBVOL_INFO, unprivileged since Linux 4.18), and whether it is
// read-only (a snapshot, as snapper and NAS boxes make them).
struct BtrfsIdentity {
  std::string uuid;
  uint32_t sector_size = 0;
  uint64_t subvolume = 0;
  std::string subvolume_uuid;
  uint64_t generation = 0;
  bool read_only = false;
  // A snapshot's source subvolume UUID ("" for a subvolume made empty) and the
  // transaction that created it.
  std::string parent_uuid;
  uint64_t created = 0;
};
BtrfsIdentity BtrfsIdentityOf(int fd);

// Inode numbers of files and directories (BTRFS_FIRST_FREE_OBJECTID, _LAST_FREE_).
inline constexpr uint64_t kBtrfsFirstInode = 256;
inline constexpr uint64_t kBtrfsLastInode = ~uint64_t(0) - 255;

// The inodes numbered first..last of fd's subvolume with an inode or extent item in a
// tree block written in transaction `since` or later (min_transid, which skips every
// older subtree), sorted and unique. A superset of the files whose extents changed
// since `since`: a block holds many inodes' items. Disjoint ranges may be searched at
// once from several threads.
Status BtrfsChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes);

// The path of directory `dir_ino` relative to the root of subvolume `tree_id`, "" for the
// root itself, without a leading or trailing slash.
Result<std::string> BtrfsDirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino);

// The path of device `devid` of the filesystem holding `fd`, as btrfs knows it
// (BTRFS_IOC_DEV_INFO).
Result<std::string> BtrfsDevicePath(int fd, uint64_t devid);

// --- Item layouts (the fields oans reads), decoded; false when the item is too short. ---

// A ROOT_ITEM (in the root tree, keyed by the tree's id): where its root block is.
struct BtrfsRootItem {
  uint64_t generation = 0, bytenr = 0, bytes_used = 0;
  uint8_t level = 0;
};
bool DecodeRootItem(std::string_view data, BtrfsRootItem* out);

// A ROOT_REF (root tree, key (parent id, ROOT_REF, child id)): where a subvolume is
// linked in its parent, the directory and the name.
struct BtrfsRootRef {
  uint64_t dirid = 0;
  std::string_view name;
};
bool DecodeRootRef(std::string_view data, BtrfsRootRef* out);

// A CHUNK_ITEM (chunk tree, key (256, CHUNK_ITEM, logical start)): its length, type and
// profile flags (BTRFS_BLOCK_GROUP_*), and where its first stripe lies.
struct BtrfsChunk {
  uint64_t length = 0, type = 0;
  uint16_t num_stripes = 0;
  uint64_t devid = 0, physical = 0;  // of stripe 0
};
bool DecodeChunk(std::string_view data, BtrfsChunk* out);

// A tree block's header, and for an internal node (level > 0) its key pointers.
struct BtrfsNodePtr {
  BtrfsKey key;  // the first key below the pointer
  uint64_t bytenr = 0, generation = 0;
};
struct BtrfsNode {
  std::string fsid;  // as BtrfsInfo::uuid has it
  uint64_t bytenr = 0, generation = 0, owner = 0;
  uint8_t level = 0;
  std::vector<BtrfsNodePtr> ptrs;  // internal nodes only
};
// False when the block is shorter than its header or than the pointers it claims.
bool DecodeNode(std::string_view block, BtrfsNode* out);
// A leaf's items (level 0) in the order it holds them, each with its key, `generation`
// as transid and its data within `block`. False when an item's data lies outside the
// block or among the item headers, or the keys are out of order.
bool DecodeLeafItems(std::string_view block, uint64_t generation, std::vector<BtrfsItem>* out);

struct BtrfsInodeItem {
  uint64_t generation = 0, transid = 0, size = 0, nbytes = 0, flags = 0;
  uint32_t nlink = 0, uid = 0, gid = 0, mode = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
};
bool DecodeInodeItem(std::string_view data, BtrfsInodeItem* out);

// An INODE_REF item holds one or more (index, name) of links in directory key.offset.
// Calls visit(name) for each.
bool DecodeInodeRefs(std::string_view data, const std::function<void(std::string_view name)>& visit);

// An INODE_EXTREF item holds (parent, index, name) entries.
bool DecodeInodeExtrefs(std::string_view data, const std::function<void(uint64_t parent, std::string_view name)>& visit);

// A DIR_ITEM/DIR_INDEX item: the location key (an inode, or a ROOT_ITEM for a subvolume)
// and the name, per entry.
struct BtrfsDirEntry {
  BtrfsKey location;
  uint8_t type = 0;  // BTRFS_FT_*
  std::string_view name;
};
bool DecodeDirItems(std::string_view data, const std::function<void(const BtrfsDirEntry&)>& visit);

// An EXTENT_DATA item's fixed part.
struct BtrfsFileExtent {
  uint64_t generation = 0;
  uint8_t compression = 0, type = 0;  // type: 0 inline, 1 regular, 2 prealloc
  uint64_t disk_bytenr = 0, disk_num_bytes = 0, offset = 0, num_bytes = 0;  // regular/prealloc only
  uint64_t ram_bytes = 0;
  std::string_view inline_data;  // inline only: the bytes after the fixed part (compressed if `compression`)
};
bool DecodeFileExtent(std::string_view data, BtrfsFileExtent* out);

}  // namespace oans
