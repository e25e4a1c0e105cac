#include "lib/btrfs/changes.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <optional>

namespace oans {
namespace {

// A search's buffer: after a backup wrote every inode's atime, every leaf is returned.
// Not larger: for each leaf it copies, the kernel first writes to every page of the
// buffer left (fault_in_subpage_writeable in search_ioctl), 1,024 pages a leaf at 4 MiB.
constexpr uint32_t kBulkBuffer = 512 << 10;
// A search of one inode's items (or a few's): most fit, and each thread keeps no more.
constexpr uint32_t kInodeBuffer = 64 << 10;

bool InodeItemType(uint8_t t) {
  return t == kBtrfsInodeItem || t == kBtrfsInodeRef || t == kBtrfsInodeExtref || t == kBtrfsDirItem ||
         t == kBtrfsDirIndex || t == kBtrfsExtentData || t == kBtrfsXattrItem;
}

// The search of a subvolume's blocks written since `since`.
BtrfsSearch ChangedBlocks(uint64_t since) {
  BtrfsSearch s;
  s.min = {kBtrfsFirstInode, 0, 0};
  s.max = {kBtrfsLastInode, 255, ~uint64_t(0)};
  s.min_transid = since;
  s.buffer_bytes = kBulkBuffer;
  return s;
}

// The inode numbers with items in tree blocks written since `since`; past `cap`, the
// search ends with *over set.
Status ChangedNumbers(Sys& sys, int fd, uint64_t since, size_t cap, std::vector<uint64_t>* inodes, bool* over,
                      uint64_t* searches) {
  bool bad = false;
  *over = false;
  ++*searches;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, ChangedBlocks(since), [&](const BtrfsItem& item) {
    const uint8_t t = item.key.type;
    if (t == kBtrfsDirItem || t == kBtrfsDirIndex) bad |= !DecodeDirItems(item.data, [](const BtrfsDirEntry&) {});
    if (!InodeItemType(t)) return true;
    if (inodes->empty() || inodes->back() != item.key.objectid) inodes->push_back(item.key.objectid);
    *over = inodes->size() > cap;
    return !*over;  // past it, the search ends: the caller walks
  }));
  if (bad) return Status::Corrupt("btrfs returned a directory item that does not decode");
  return Status::Ok();
}

// One inode's items, as searches hand them out in key order, and whether they were all
// of them: its links as many as its link count, a directory's entries as long as its
// size says (each name counts twice: DIR_ITEM and DIR_INDEX), a file's extents as many
// bytes as its item counts (what btrfs check compares).
class InodeItems {
 public:
  explicit InodeItems(uint64_t ino) : map_(ino) { c_.ino = ino; }
  // False when an item other than a file extent does not decode (damage).
  bool Add(const BtrfsItem& item);
  bool Complete() const;
  // The inode, its map made; the builder is spent.
  ChangedInode Finish();

 private:
  ChangedInode c_;
  TreeMapBuilder map_;
  bool usable_ = true;  // every file extent decoded
  uint64_t names_ = 0, entry_bytes_ = 0, data_bytes_ = 0;
  bool has_inline_ = false;
};

bool InodeItems::Add(const BtrfsItem& item) {
  ChangedInode* c = &c_;
  switch (item.key.type) {
    case kBtrfsInodeItem:
      return (c->exists = DecodeInodeItem(item.data, &c->item)) && map_.Add(item);
    case kBtrfsInodeRef:
      return DecodeInodeRefs(item.data, [&](std::string_view name) {
        c->links.emplace_back(item.key.offset, name);
        names_++;
      });
    case kBtrfsInodeExtref:
      return DecodeInodeExtrefs(item.data, [&](uint64_t parent, std::string_view name) {
        c->links.emplace_back(parent, name);
        names_++;
      });
    case kBtrfsDirIndex:
      return DecodeDirItems(item.data, [&](const BtrfsDirEntry& e) {
        entry_bytes_ += 2 * e.name.size();
        if (e.location.type == kBtrfsInodeItem) c->entries.emplace_back(std::string(e.name), e.location.objectid);
      });
    case kBtrfsExtentData: {
      if (!c->exists || !S_ISREG(c->item.mode)) return true;
      BtrfsFileExtent x;
      // One that does not decode leaves the file unmapped (it is opened).
      if (!DecodeFileExtent(item.data, &x) || !map_.Add(item)) return usable_ = false, true;
      if (x.type == 0) has_inline_ = true, data_bytes_ += x.ram_bytes;
      else if (x.disk_bytenr != 0) data_bytes_ += x.num_bytes;
      return true;
    }
    default:
      return true;
  }
}

bool InodeItems::Complete() const {
  if (!c_.exists || !usable_ || names_ != c_.item.nlink) return false;
  if (S_ISDIR(c_.item.mode)) return entry_bytes_ == c_.item.size;
  if (S_ISREG(c_.item.mode)) return data_bytes_ == c_.item.nbytes;
  return true;
}

ChangedInode InodeItems::Finish() {
  if (c_.exists && S_ISREG(c_.item.mode)) c_.mapped = usable_ && map_.Finish(&c_.map);
  return std::move(c_);
}

// Where inodes go once their items are in: taken by the caller's judge, or kept (up to
// a limit).
struct Keeper {
  const QuietInode& quiet;
  size_t limit;
  SubvolumeChanges* out;
  bool room = true;
  std::atomic<size_t>* kept_by_all = nullptr;  // slices judged at once count together
  const std::atomic<bool>* stop = nullptr;     // set: no more room, and stopped says why
  bool stopped = false;

  void Keep(ChangedInode c) {
    if (quiet && quiet(c)) {
      out->quiet++;
      return;
    }
    // Inline data is read again if the file needs keys: most changed files keep theirs.
    std::string().swap(c.map.inline_data);
    out->inodes.push_back(std::move(c));
    room = (kept_by_all ? ++*kept_by_all : out->inodes.size()) <= limit;
  }
  bool Room() {
    if (stop && stop->load(std::memory_order_relaxed)) stopped = true;
    if (room && kept_by_all) room = kept_by_all->load() <= limit;
    return room && !stopped;
  }
};

// Reads inodes [first, last) of `inos` whole, in one search of their key range, with a
// buffer of `buffer` bytes a call.
Status ReadRun(Sys& sys, int fd, const std::vector<uint64_t>& inos, size_t first, size_t last, Keeper* keeper,
               uint32_t buffer) {
  BtrfsSearch s;
  s.min = {inos[first], kBtrfsInodeItem, 0};
  s.max = {inos[last - 1], kBtrfsExtentData, ~uint64_t(0)};
  s.buffer_bytes = buffer;
  size_t next = first;
  std::optional<InodeItems> c;
  uint64_t ino = 0;
  bool bad = false;
  auto end_inode = [&] {
    if (c) keeper->Keep(c->Finish());
    c.reset();
  };
  keeper->out->searches++;
  OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
    if (c && item.key.objectid != ino) end_inode();
    if (!keeper->room) return false;
    if (!c) {
      while (next < last && inos[next] < item.key.objectid) ++next;
      if (next == last) return false;
      if (inos[next] != item.key.objectid) return true;  // an unchanged inode's item
      ino = inos[next++];
      c.emplace(ino);
    }
    bad |= !c->Add(item);
    return true;
  }));
  end_inode();
  if (bad) return Status::Corrupt("btrfs returned an inode item, link or directory entry that does not decode");
  return Status::Ok();
}

// Runs of `inos` (sorted) whose neighbours are at most `gap` apart: [first, last).
template <typename F>
Status ForEachRun(const std::vector<uint64_t>& inos, const F& run, uint64_t gap = kInodeGap) {
  for (size_t first = 0; first < inos.size();) {
    size_t last = first + 1;
    while (last < inos.size() && inos[last] - inos[last - 1] <= gap) ++last;
    OANS_RETURN_IF_ERROR(run(first, last));
    first = last;
  }
  return Status::Ok();
}

// Runs `work` on `threads` threads at once, this one among them (the others as many as
// can be started: work must take what is left).
template <typename F>
void RunOnThreads(size_t threads, const F& work) {
  std::vector<std::thread> others;
  try {
    for (size_t t = 1; t < threads; ++t) others.emplace_back(work);
  } catch (...) {  // no more threads to be had: those started work
  }
  work();
  for (auto& t : others) t.join();
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
                         SubvolumeChanges* out, size_t threads, uint64_t gap) {
  std::vector<std::pair<size_t, size_t>> runs;
  OANS_RETURN_IF_ERROR(ForEachRun(
      inos,
      [&](size_t first, size_t last) {
        runs.emplace_back(first, last);
        return Status::Ok();
      },
      gap));
  // Each run's inodes apart, so that they are added in inode order whichever thread
  // searched them.
  const uint32_t buffer = gap < kInodeGap ? kInodeBuffer : kBulkBuffer;
  std::vector<SubvolumeChanges> outs(runs.size());
  std::vector<Status> status(runs.size());
  // The limit counts the inodes already kept (a judge's, a pass before) with these.
  std::atomic<size_t> kept{out->inodes.size()}, next{0};
  std::atomic<bool> full{false};
  auto work = [&] {
    for (size_t k; !full && (k = next.fetch_add(1)) < runs.size();) {
      Keeper keeper{quiet, limit, &outs[k], true, &kept};
      try {
        status[k] = ReadRun(sys, fd, inos, runs[k].first, runs[k].second, &keeper, buffer);
      } catch (const std::exception& e) {  // on a thread of its own, it must not escape
        status[k] = Status::Io(std::string("reading changed inodes: ") + e.what(), ENOMEM);
      }
      if (!keeper.room || !status[k].ok()) full = true;
    }
  };
  RunOnThreads(std::min(threads, runs.size()), work);
  const size_t before = out->inodes.size();
  for (size_t k = 0; k < runs.size(); ++k) {
    OANS_RETURN_IF_ERROR(status[k]);
    out->quiet += outs[k].quiet;
    out->searches += outs[k].searches;
    for (auto& c : outs[k].inodes) out->inodes.push_back(std::move(c));
    std::vector<ChangedInode>().swap(outs[k].inodes);
  }
  if (full || kept > limit) {
    out->too_many = true;
    std::vector<ChangedInode>().swap(out->inodes);
    return Status::Ok();
  }
  // Added to inodes already there (JudgeChangedInodes'): in inode order again.
  if (before > 0)
    std::inplace_merge(out->inodes.begin(), out->inodes.begin() + long(before), out->inodes.end(),
                       [](const ChangedInode& a, const ChangedInode& b) { return a.ino < b.ino; });
  return Status::Ok();
}

namespace {

// The inodes numbered `first` to `last` of JudgeChangedInodes: one search, or the leaves.
Status JudgeSlice(Sys& sys, int fd, uint64_t since, uint64_t first, uint64_t last, Keeper* keeper,
                  std::vector<uint64_t>* rest, const ChangedLeaves* leaves) {
  SubvolumeChanges* out = keeper->out;
  std::optional<InodeItems> c;
  bool bad = false;
  uint64_t ino = 0;
  auto end_inode = [&] {
    if (!c) return;
    if (c->Complete()) keeper->Keep(c->Finish());
    else rest->push_back(ino);
    c.reset();
  };
  const BtrfsVisitor visit = [&](const BtrfsItem& item) {
    if (!InodeItemType(item.key.type)) return true;
    if (c && item.key.objectid != ino) end_inode();
    if (!keeper->Room()) return false;
    if (!c) {
      ino = item.key.objectid;
      c.emplace(ino);
      out->found++;
    }
    bad |= !c->Add(item);
    return true;
  };
  if (leaves) {
    OANS_RETURN_IF_ERROR(leaves->Visit(first, last, visit));
  } else {
    BtrfsSearch s = ChangedBlocks(since);
    s.min = {first, 0, 0};
    s.max = {last, 255, ~uint64_t(0)};
    out->searches++;
    OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, visit));
  }
  end_inode();
  if (bad) return Status::Corrupt("btrfs returned an inode item, link or directory entry that does not decode");
  return Status::Ok();
}

}  // namespace

Status JudgeChangedInodes(Sys& sys, int fd, uint64_t since, const QuietInode& quiet, size_t limit,
                          std::vector<uint64_t>* rest, SubvolumeChanges* out, const std::vector<uint64_t>& splits,
                          uint64_t first, uint64_t last, const std::atomic<bool>* stop, const ChangedLeaves* leaves) {
  first = std::max(first, kBtrfsFirstInode);
  last = std::min(last, kBtrfsLastInode);
  if (first > last) return Status::Ok();
  // Slice k holds the numbers from cuts[k - 1] (`first` for k = 0) to before cuts[k]
  // (`last` for the last slice); cuts outside those numbers, or out of order, are left
  // out.
  std::vector<uint64_t> cuts;
  for (uint64_t at : splits)
    if (at > first && at <= last && (cuts.empty() || at > cuts.back())) cuts.push_back(at);
  const size_t slices = cuts.size() + 1;
  std::vector<SubvolumeChanges> outs(slices);
  std::vector<std::vector<uint64_t>> rests(slices);
  std::vector<Status> status(slices);
  std::atomic<size_t> kept{0};
  std::vector<Keeper> keepers;
  for (size_t k = 0; k < slices; ++k) keepers.push_back({quiet, limit, &outs[k], true, slices > 1 ? &kept : nullptr, stop});
  auto judge = [&](size_t k) {
    const uint64_t from = k == 0 ? first : cuts[k - 1];
    const uint64_t to = k + 1 == slices ? last : cuts[k] - 1;
    try {
      status[k] = JudgeSlice(sys, fd, since, from, to, &keepers[k], &rests[k], leaves);
    } catch (const std::exception& e) {  // on a thread of its own, it must not escape
      status[k] = Status::Io(std::string("judging changed inodes: ") + e.what(), ENOMEM);
    }
  };
  std::atomic<size_t> next{0};
  RunOnThreads(slices, [&] {
    for (size_t k; (k = next.fetch_add(1)) < slices;) judge(k);
  });
  for (size_t j = 0; j < slices; ++j) {
    OANS_RETURN_IF_ERROR(status[j]);
    if (keepers[j].stopped) return Status::Interrupted("stopped");
    out->found += outs[j].found;
    out->quiet += outs[j].quiet;
    out->searches += outs[j].searches;
    if (!keepers[j].room) out->too_many = true;
    // Slices in order: inode order again.
    for (auto& c : outs[j].inodes) out->inodes.push_back(std::move(c));
    std::vector<ChangedInode>().swap(outs[j].inodes);
    rest->insert(rest->end(), rests[j].begin(), rests[j].end());
  }
  if (out->too_many) std::vector<ChangedInode>().swap(out->inodes);
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
  out->found = inodes.size();
  return ReadChangedInodes(sys, fd, inodes, nullptr, limit, out);
}

}  // namespace oans
