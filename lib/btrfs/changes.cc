#include "lib/btrfs/changes.h"

#include <sys/stat.h>

#include <memory>
#include <optional>

namespace oans {
namespace {

// Inode numbers this close are read in one search: the items between, of inodes that
// did not change, cost less than a search of their own.
constexpr uint64_t kInodeGap = 512;
// A search's buffer: after a backup wrote every inode's atime, every leaf is returned.
// Not larger: for each leaf it copies, the kernel first writes to every page of the
// buffer left (fault_in_subpage_writeable in search_ioctl), 1,024 pages a leaf at 4 MiB.
constexpr uint32_t kBulkBuffer = 512 << 10;

// The inode numbers with items in tree blocks written since `since`; past `cap`, the
// search ends with *over set.
Status ChangedNumbers(Sys& sys, int fd, uint64_t since, size_t cap, std::vector<uint64_t>* inodes, bool* over,
                      uint64_t* searches) {
  BtrfsSearch s;
  s.min = {kBtrfsFirstInode, 0, 0};
  s.max = {kBtrfsLastInode, 255, ~uint64_t(0)};
  s.min_transid = since;
  s.buffer_bytes = kBulkBuffer;
  bool bad = false;
  *over = false;
  ++*searches;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    const uint8_t t = item.key.type;
    if (t == kBtrfsDirItem || t == kBtrfsDirIndex) bad |= !DecodeDirItems(item.data, [](const BtrfsDirEntry&) {});
    if (t != kBtrfsInodeItem && t != kBtrfsInodeRef && t != kBtrfsInodeExtref && t != kBtrfsDirItem &&
        t != kBtrfsDirIndex && t != kBtrfsExtentData && t != kBtrfsXattrItem)
      return true;
    if (inodes->empty() || inodes->back() != item.key.objectid) inodes->push_back(item.key.objectid);
    *over = inodes->size() > cap;
    return !*over;  // past it, the search ends: the caller walks
  }));
  if (bad) return Status::Corrupt("btrfs returned a directory item that does not decode");
  return Status::Ok();
}

// Takes one item of inode c; false when it does not decode.
bool AddItem(const BtrfsItem& item, ChangedInode* c, TreeMapBuilder* map) {
  switch (item.key.type) {
    case kBtrfsInodeItem:
      return (c->exists = DecodeInodeItem(item.data, &c->item)) && map->Add(item);
    case kBtrfsInodeRef:
      return DecodeInodeRefs(item.data, [&](std::string_view name) { c->links.emplace_back(item.key.offset, name); });
    case kBtrfsInodeExtref:
      return DecodeInodeExtrefs(item.data,
                                [&](uint64_t parent, std::string_view name) { c->links.emplace_back(parent, name); });
    case kBtrfsDirIndex:
      return DecodeDirItems(item.data, [&](const BtrfsDirEntry& e) {
        if (e.location.type == kBtrfsInodeItem) c->entries.emplace_back(std::string(e.name), e.location.objectid);
      });
    case kBtrfsExtentData:
      return !c->exists || !S_ISREG(c->item.mode) || map->Add(item);
    default:
      return true;
  }
}

// Reads inodes [first, last) of `inos` whole, in one search of their key range, and
// keeps those `quiet` does not leave out; false in *room once more than `limit` are kept.
struct RunReader {
  const std::vector<uint64_t>& inos;
  const QuietInode& quiet;
  size_t limit;
  SubvolumeChanges* out;
  bool room = true;

  Status Read(Sys& sys, int fd, size_t first, size_t last);
};

Status RunReader::Read(Sys& sys, int fd, size_t first, size_t last) {
  BtrfsSearch s;
  s.min = {inos[first], kBtrfsInodeItem, 0};
  s.max = {inos[last - 1], kBtrfsExtentData, ~uint64_t(0)};
  s.buffer_bytes = kBulkBuffer;
  size_t next = first;
  std::optional<ChangedInode> c;
  std::unique_ptr<TreeMapBuilder> map;
  bool bad = false, usable = true;
  auto end_inode = [&] {
    if (!c) return;
    if (c->exists && S_ISREG(c->item.mode)) c->mapped = usable && map->Finish(&c->map);
    if (quiet && quiet(*c)) {
      out->quiet++;
    } else {
      // Inline data is read again if the file needs keys: most changed files keep theirs.
      std::string().swap(c->map.inline_data);
      out->inodes.push_back(std::move(*c));
      room = out->inodes.size() <= limit;
    }
    c.reset();
  };
  out->searches++;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    if (c && item.key.objectid != c->ino) end_inode();
    if (!room) return false;
    if (!c) {
      while (next < last && inos[next] < item.key.objectid) ++next;
      if (next == last) return false;
      if (inos[next] != item.key.objectid) return true;  // an unchanged inode's item
      c.emplace();
      c->ino = inos[next++];
      map = std::make_unique<TreeMapBuilder>(c->ino);
      usable = true;
    }
    const bool ok = AddItem(item, &*c, map.get());
    // A file extent that does not decode leaves the file unmapped (it is opened);
    // anything else that does not decode is damage.
    if (!ok && item.key.type == kBtrfsExtentData) usable = false;
    else bad |= !ok;
    return true;
  }));
  end_inode();
  if (bad) return Status::Corrupt("btrfs returned an inode item, link or directory entry that does not decode");
  return Status::Ok();
}

// Runs of `inos` (sorted) whose neighbours are at most kInodeGap apart: [first, last).
template <typename F>
Status ForEachRun(const std::vector<uint64_t>& inos, const F& run) {
  for (size_t first = 0; first < inos.size();) {
    size_t last = first + 1;
    while (last < inos.size() && inos[last] - inos[last - 1] <= kInodeGap) ++last;
    OANS_RETURN_IF_ERROR(run(first, last));
    first = last;
  }
  return Status::Ok();
}

}  // namespace

Status ReadDirLinks(Sys& sys, int fd, const std::vector<uint64_t>& inos, std::map<uint64_t, DirLink>* out,
                    uint64_t* searches) {
  bool bad = false;
  Status s = ForEachRun(inos, [&](size_t first, size_t last) {
    BtrfsSearch q;
    q.min = {inos[first], kBtrfsInodeRef, 0};
    q.max = {inos[last - 1], kBtrfsInodeRef, ~uint64_t(0)};
    q.buffer_bytes = kBulkBuffer;
    size_t next = first;
    ++*searches;
    return sys.TreeSearch(fd, q, [&](const BtrfsItem& item) {
      if (item.key.type != kBtrfsInodeRef) return true;
      while (next < last && inos[next] < item.key.objectid) ++next;
      if (next == last) return false;
      if (inos[next] != item.key.objectid) return true;
      bad |= !DecodeInodeRefs(item.data, [&](std::string_view name) {
        (*out)[item.key.objectid] = DirLink{item.key.offset, std::string(name)};
      });
      return true;
    });
  });
  OANS_RETURN_IF_ERROR(s);
  if (bad) return Status::Corrupt("btrfs returned a directory's link that does not decode");
  return Status::Ok();
}

Status ChangedInodeNumbers(Sys& sys, int fd, uint64_t since, size_t cap, std::vector<uint64_t>* out, bool* over,
                           uint64_t* searches) {
  out->clear();
  return ChangedNumbers(sys, fd, since, cap, out, over, searches);
}

Status ReadChangedInodes(Sys& sys, int fd, const std::vector<uint64_t>& inos, const QuietInode& quiet, size_t limit,
                         SubvolumeChanges* out) {
  out->inodes.clear();
  out->too_many = false;
  RunReader reader{inos, quiet, limit, out};
  Status s = ForEachRun(inos, [&](size_t first, size_t last) {
    if (!reader.room) return Status::Ok();
    return reader.Read(sys, fd, first, last);
  });
  OANS_RETURN_IF_ERROR(s);
  if (!reader.room) {
    out->too_many = true;
    std::vector<ChangedInode>().swap(out->inodes);
  }
  return Status::Ok();
}

Status FindSubvolumeChanges(Sys& sys, int fd, uint64_t since, SubvolumeChanges* out, size_t limit) {
  *out = SubvolumeChanges();
  std::vector<uint64_t> inodes;
  bool over = false;
  OANS_RETURN_IF_ERROR(ChangedNumbers(sys, fd, since, limit, &inodes, &over, &out->searches));
  if (over) {
    out->too_many = true;
    return Status::Ok();
  }
  return ReadChangedInodes(sys, fd, inodes, nullptr, limit, out);
}

}  // namespace oans
