#include "lib/btrfs/changes.h"


namespace oans {

Status LookUpInode(Sys& sys, int fd, uint64_t ino, ChangedInode* out) {
  *out = ChangedInode();
  out->ino = ino;
  BtrfsSearch s;
  s.min = {ino, kBtrfsInodeItem, 0};
  s.max = {ino, kBtrfsInodeExtref, ~uint64_t(0)};
  bool bad = false;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    if (item.key.type == kBtrfsInodeItem) {
      out->exists = DecodeInodeItem(item.data, &out->item);
      bad |= !out->exists;
    } else if (item.key.type == kBtrfsInodeRef) {
      bad |= !DecodeInodeRefs(item.data, [&](std::string_view name) {
        out->links.emplace_back(item.key.offset, std::string(name));
      });
    } else if (item.key.type == kBtrfsInodeExtref) {
      bad |= !DecodeInodeExtrefs(item.data, [&](uint64_t parent, std::string_view name) {
        out->links.emplace_back(parent, std::string(name));
      });
    }
    return true;
  }));
  if (bad) return Status::Corrupt("btrfs returned an inode item or link of inode " + std::to_string(ino) +
                                  " that does not decode");
  return Status::Ok();
}

Status FindSubvolumeChanges(Sys& sys, int fd, uint64_t since, SubvolumeChanges* out, size_t limit) {
  *out = SubvolumeChanges();
  std::vector<uint64_t> inodes;
  BtrfsSearch s;
  s.min = {kBtrfsFirstInode, 0, 0};
  s.max = {kBtrfsLastInode, 255, ~uint64_t(0)};
  s.min_transid = since;
  bool bad = false;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    const uint8_t t = item.key.type;
    if (t == kBtrfsDirItem || t == kBtrfsDirIndex) {
      bad |= !DecodeDirItems(item.data, [&](const BtrfsDirEntry& e) {
        if (e.location.type == kBtrfsRootItem) out->subvolume_entry = true;
      });
    }
    if (t != kBtrfsInodeItem && t != kBtrfsInodeRef && t != kBtrfsInodeExtref && t != kBtrfsDirItem &&
        t != kBtrfsDirIndex && t != kBtrfsExtentData && t != kBtrfsXattrItem)
      return true;
    if (inodes.empty() || inodes.back() != item.key.objectid) inodes.push_back(item.key.objectid);
    return inodes.size() <= limit;  // past it, the search ends: the caller walks
  }));
  if (bad) return Status::Corrupt("btrfs returned a directory item that does not decode");
  if (inodes.size() > limit) {
    out->too_many = true;
    return Status::Ok();
  }
  out->inodes.resize(inodes.size());
  for (size_t i = 0; i < inodes.size(); ++i) OANS_RETURN_IF_ERROR(LookUpInode(sys, fd, inodes[i], &out->inodes[i]));
  return Status::Ok();
}

}  // namespace oans
