#include "lib/btrfs/backrefs.h"

#include <endian.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "lib/btrfs/extent_item.h"
#include "lib/btrfs/search.h"
#include "lib/btrfs/space.h"

namespace oans {
namespace {

constexpr uint64_t kBackMargin = 128ull << 20;  // the largest data extent
constexpr size_t kMaxRefsBuffer = 16u << 20;    // LOGICAL_INO_V2's limit

uint64_t Le64(std::string_view d, size_t at) {
  uint64_t v = 0;
  if (at + 8 <= d.size()) std::memcpy(&v, d.data() + at, 8);
  return le64toh(v);
}

uint32_t Le32(std::string_view d, size_t at) {
  uint32_t v = 0;
  if (at + 4 <= d.size()) std::memcpy(&v, d.data() + at, 4);
  return le32toh(v);
}

// A subvolume's root item: the fields read.
struct Root {
  bool whole = false;  // the item holds every field below but the UUIDs
  uint64_t flags = 0, bytes_used = 0;
  uint64_t last_snapshot = 0;  // the transaction of its last snapshot (0: never)
  uint32_t refs = 0;           // 0: deleted, its tree being dropped
  std::string uuid, parent_uuid;
};

std::map<uint64_t, Root> ReadRoots(int fd, Status* status) {
  std::map<uint64_t, Root> roots;
  BtrfsSearch s;
  s.tree_id = kBtrfsRootTree;
  s.min = {BTRFS_FS_TREE_OBJECTID, kBtrfsRootItem, 0};
  s.max = {uint64_t(BTRFS_LAST_FREE_OBJECTID), kBtrfsRootItem, ~uint64_t(0)};
  *status = BtrfsTreeSearch(fd, s, [&](const BtrfsItem& it) {
    if (it.key.type != kBtrfsRootItem) return true;
    Root r;
    r.whole = it.data.size() >= offsetof(btrfs_root_item, drop_progress);
    r.flags = Le64(it.data, offsetof(btrfs_root_item, flags));
    r.bytes_used = Le64(it.data, offsetof(btrfs_root_item, bytes_used));
    r.last_snapshot = Le64(it.data, offsetof(btrfs_root_item, last_snapshot));
    r.refs = Le32(it.data, offsetof(btrfs_root_item, refs));
    if (it.data.size() >= offsetof(btrfs_root_item, received_uuid)) {
      r.uuid.assign(it.data.data() + offsetof(btrfs_root_item, uuid), BTRFS_UUID_SIZE);
      r.parent_uuid.assign(it.data.data() + offsetof(btrfs_root_item, parent_uuid), BTRFS_UUID_SIZE);
    }
    roots[it.key.objectid] = std::move(r);
    return true;
  });
  return roots;
}

bool IsZero(const std::string& u) { return std::all_of(u.begin(), u.end(), [](char c) { return c == 0; }); }

// Every reference to the extent at `bytenr`, counted by (subvolume, inode).
Status CountRefs(int fd, const std::map<uint64_t, Root>& roots, std::vector<char>* buf, DataExtentRefs* e) {
  e->looked_up = true;
  e->refs = e->ro_refs = 0;
  for (;;) {
    btrfs_ioctl_logical_ino_args args{};
    args.logical = e->bytenr;
    args.size = buf->size();
    args.flags = BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET;
    args.inodes = reinterpret_cast<uintptr_t>(buf->data());
    if (::ioctl(fd, BTRFS_IOC_LOGICAL_INO_V2, &args) != 0) {
      if (errno == ENOENT) {  // freed meanwhile: its references unknown, not none
        e->complete = false;
        return Status::Ok();
      }
      return Status::Io("BTRFS_IOC_LOGICAL_INO_V2", errno);
    }
    const auto* c = reinterpret_cast<const btrfs_data_container*>(buf->data());
    if (c->bytes_missing && buf->size() < kMaxRefsBuffer) {
      buf->resize(std::min(kMaxRefsBuffer, buf->size() + c->bytes_missing + 4096));
      continue;
    }
    e->complete = c->elem_missed == 0;
    std::vector<std::pair<uint64_t, uint64_t>> owners;  // (root, inode)
    for (uint32_t i = 0; i + 3 <= c->elem_cnt; i += 3)
      owners.push_back({c->val[i + 2], c->val[i]});
    std::sort(owners.begin(), owners.end());
    owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
    e->refs = uint32_t(owners.size());
    for (const auto& [root, ino] : owners) {
      auto it = roots.find(root);
      if (it != roots.end() && (it->second.flags & BTRFS_ROOT_SUBVOL_RDONLY)) e->ro_refs++;
    }
    return Status::Ok();
  }
}

// One data extent's references as its items list them, read in key order: its
// EXTENT_ITEM, then the keyed references under the same bytenr.
struct ItemRefs {
  bool open = false;
  size_t index = 0;     // of the extent in the output
  bool usable = false;  // every item decoded, no shared reference
  uint64_t total = 0, counted = 0, generation = 0;
  std::vector<std::pair<uint64_t, uint64_t>> owners;  // (root, inode)

  void Start(size_t at, bool decoded, const BtrfsDataExtent& x) {
    open = true;
    index = at;
    usable = decoded;
    total = x.refs;
    generation = x.generation;
    counted = 0;
    owners.clear();
    if (decoded)
      for (const auto& r : x.inline_refs) Add(r);
  }
  void Add(const BtrfsDataRef& r) {
    usable &= !r.shared;
    counted += r.count;
    owners.push_back({r.root, r.inode});
  }
  // Fills e's references when the items name every holder; false when they may not.
  bool Finish(const std::map<uint64_t, Root>& roots, DataExtentRefs* e) {
    open = false;
    if (!usable || counted != total) return false;  // a shared reference, or the items disagree
    for (const auto& [root, ino] : owners) {
      auto it = roots.find(root);
      // A snapshot since it was written may hold it through the subvolume's tree blocks.
      if (it == roots.end() || !it->second.whole || it->second.refs == 0 ||
          generation <= it->second.last_snapshot)
        return false;
    }
    std::sort(owners.begin(), owners.end());
    owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
    e->refs = uint32_t(owners.size());
    e->ro_refs = 0;
    for (const auto& [root, ino] : owners) e->ro_refs += (roots.at(root).flags & BTRFS_ROOT_SUBVOL_RDONLY) ? 1 : 0;
    return true;
  }
};

// Searches the extent tree for the data extents of `ranges`, appended to `out`, each
// with the references its items name; the indexes of those they cannot count go to
// `look_up`.
Status SearchExtents(int fd, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                     const std::map<uint64_t, Root>& roots, const DataExtentsOptions& o,
                     std::vector<DataExtentRefs>* out, std::vector<size_t>* look_up) {
  BtrfsSearch s;
  s.tree_id = kBtrfsExtentTree;
  const uint64_t first = ranges.front().first;
  s.min = {first > kBackMargin ? first - kBackMargin : 0, kBtrfsExtentItem, 0};
  s.max = {ranges.back().second, kBtrfsExtentItem, 0};  // with the keyed references before it
  size_t next = 0;
  uint64_t seen = 0;
  bool stopped = false;
  ItemRefs cur;
  BtrfsDataExtent x;
  auto finish = [&] {
    if (cur.open && (o.look_up_all || !cur.Finish(roots, &(*out)[cur.index]))) look_up->push_back(cur.index);
    cur.open = false;
  };
  OANS_RETURN_IF_ERROR(BtrfsTreeSearch(fd, s, [&](const BtrfsItem& it) {
    if (it.key.type == kBtrfsExtentItem) {
      finish();
      if (++seen % 4096 == 0 && o.stop && o.stop()) {
        stopped = true;
        return false;
      }
      const bool decoded = DecodeDataExtentItem(it.data, &x);
      if (decoded && !x.data) return true;  // a tree block's
      const uint64_t start = it.key.objectid, end = start + it.key.offset;
      while (next < ranges.size() && ranges[next].second <= start) ++next;
      if (next < ranges.size() && ranges[next].first < end) {
        out->push_back({start, it.key.offset, 0, 0, true, false});
        cur.Start(out->size() - 1, decoded, x);
      }
      return next < ranges.size();
    }
    if (cur.open && it.key.objectid == (*out)[cur.index].bytenr &&
        (it.key.type == kBtrfsExtentDataRef || it.key.type == kBtrfsSharedDataRef)) {
      BtrfsDataRef r;
      if (DecodeDataRefItem(it.key, it.data, &r)) cur.Add(r);
      else cur.usable = false;
    }
    return true;
  }));
  finish();
  return stopped ? Status::Interrupted("stopped") : Status::Ok();
}

}  // namespace

Status DataExtentsAt(int fd, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                     const DataExtentsOptions& o, std::vector<DataExtentRefs>* out) {
  if (ranges.empty()) return Status::Ok();
  Status roots_status;
  const auto roots = ReadRoots(fd, &roots_status);
  OANS_RETURN_IF_ERROR(roots_status);
  std::vector<size_t> look_up;
  OANS_RETURN_IF_ERROR(SearchExtents(fd, ranges, roots, o, out, &look_up));
  std::vector<char> buf(64u << 10);
  for (size_t i : look_up) {
    if (o.stop && o.stop()) return Status::Interrupted("stopped");
    OANS_RETURN_IF_ERROR(CountRefs(fd, roots, &buf, &(*out)[i]));
  }
  return Status::Ok();
}

Result<SubvolumeFacts> SubvolumeFactsOf(int fd, uint64_t subvolume) {
  Status st;
  const auto roots = ReadRoots(fd, &st);
  OANS_RETURN_IF_ERROR(st);
  auto it = roots.find(subvolume);
  if (it == roots.end()) return Status::Invalid("subvolume " + std::to_string(subvolume) + " has no root item");
  SubvolumeFacts f;
  const Root& r = it->second;
  f.read_only = r.flags & BTRFS_ROOT_SUBVOL_RDONLY;
  f.tree_bytes = r.bytes_used;
  f.shared = !IsZero(r.parent_uuid);
  for (const auto& [id, other] : roots) f.shared |= id != subvolume && !IsZero(r.uuid) && other.parent_uuid == r.uuid;
  auto info = BtrfsInfoOf(fd);
  if (info.ok()) f.node_size = info->node_size;
  auto copies = BtrfsMetadataCopies(fd);
  if (copies.ok()) f.metadata_copies = *copies;
  return f;
}

}  // namespace oans
