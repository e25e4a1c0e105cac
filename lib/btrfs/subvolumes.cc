#include "lib/btrfs/subvolumes.h"

#include <deque>
#include <map>
#include <utility>

#include "lib/btrfs/search.h"

namespace oans {
namespace {

// More subvolumes than this below one root is damage or a tree to walk.
constexpr size_t kMaxNested = 100000;

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

struct Link {
  uint64_t child = 0, dirid = 0;
  std::string name;
};

// The ROOT_REF items of subvolume `parent`: its children, where they are linked.
Status ChildLinks(Sys& sys, int fd, uint64_t parent, std::vector<Link>* out) {
  BtrfsSearch s;
  s.tree_id = kBtrfsRootTree;
  s.min = {parent, kBtrfsRootRef, 0};
  s.max = {parent, kBtrfsRootRef, ~uint64_t(0)};
  bool bad = false;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    if (item.key.objectid != parent || item.key.type != kBtrfsRootRef) return true;
    BtrfsRootRef ref;
    if (!DecodeRootRef(item.data, &ref) || ref.name.empty()) {
      bad = true;
      return false;
    }
    out->push_back({item.key.offset, ref.dirid, std::string(ref.name)});
    return true;
  }));
  if (bad) return Status::Corrupt("btrfs returned a subvolume link (ROOT_REF) that does not decode");
  return Status::Ok();
}

}  // namespace

Status SubvolumesBelow(Sys& sys, int fd, uint64_t id, const std::function<bool(const std::string&)>& wanted,
                       std::vector<NestedSubvolume>* out, uint64_t* searches) {
  std::deque<NestedSubvolume> todo{{id, ""}};
  while (!todo.empty()) {
    const NestedSubvolume parent = std::move(todo.front());
    todo.pop_front();
    std::vector<Link> links;
    ++*searches;
    OANS_RETURN_IF_ERROR(ChildLinks(sys, fd, parent.id, &links));
    std::map<uint64_t, std::string> dirs;  // directory inode -> its path in the parent
    for (auto& l : links) {
      auto d = dirs.find(l.dirid);
      if (d == dirs.end()) {
        std::string path;
        if (l.dirid != kBtrfsFirstInode) {
          ++*searches;
          auto p = sys.DirectoryPath(fd, parent.id, l.dirid);
          if (!p.ok()) return p.status();
          path = *p;
        }
        d = dirs.emplace(l.dirid, std::move(path)).first;
      }
      NestedSubvolume child{l.child, Join(parent.rel, Join(d->second, l.name))};
      if (!wanted(child.rel)) continue;
      out->push_back(child);
      todo.push_back(std::move(child));
      if (out->size() > kMaxNested)
        return Status::Invalid("more than " + std::to_string(kMaxNested) + " subvolumes below subvolume " +
                               std::to_string(id));
    }
  }
  return Status::Ok();
}

}  // namespace oans
