#include "lib/btrfs/changed_leaves.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <tuple>

namespace oans {
namespace {

// The search's buffer when a leaf fails its check: the rest of the range, as the judge
// would have searched it (lib/btrfs/changes.cc).
constexpr uint32_t kSearchBuffer = 512 << 10;

struct FreeAligned {
  void operator()(char* p) const { std::free(p); }
};

}  // namespace

// One read from a device: bytes [physical, physical + length) into the buffer at `at`.
struct ChangedLeaves::Request {
  uint64_t devid, physical, length, at;
};

ChangedLeaves::ChangedLeaves(Sys& sys, int fd, uint64_t since, BtrfsInfo info, ChangedLeavesStats* stats)
    : sys_(sys), fd_(fd), since_(since), info_(std::move(info)), devices_(sys, fd), stats_(stats) {}

Result<std::unique_ptr<ChangedLeaves>> ChangedLeaves::Lay(Sys& sys, int fd, uint64_t since, uint64_t first,
                                                          uint64_t last, ChangedLeavesStats* stats) {
  auto info = sys.BtrfsInfoOf(fd);
  if (!info.ok()) return info.status();
  if (!TreeSumsComputable(*info))
    return Status::Invalid("its tree blocks' checksums are of a kind oans does not compute");
  if (info->node_size == 0 || info->node_size > kWindowBytes || info->node_size % 4096 != 0)
    return Status::Invalid("its tree blocks are of an unexpected size");
  auto id = sys.Identify(fd);
  if (!id.ok()) return id.status();
  std::unique_ptr<ChangedLeaves> c(new ChangedLeaves(sys, fd, since, std::move(*info), stats));
  OANS_RETURN_IF_ERROR(c->chunks_.Load(sys, fd));
  const std::function<bool()> no_stop;
  const TreeReading r{sys, fd, c->info_, c->chunks_, &c->devices_, no_stop};
  BtrfsSearch range;
  range.tree_id = id->subvolume;
  range.min = {first, 0, 0};
  range.max = {last, 255, ~uint64_t(0)};
  bool cut = false;
  BtrfsKey cut_at;
  OANS_RETURN_IF_ERROR(LeavesOnDisk(r, range, since, ~uint64_t(0), &c->leaves_, &cut, &cut_at, /*shared=*/true));
  std::sort(c->leaves_.begin(), c->leaves_.end(),
            [](const TreeBlock& a, const TreeBlock& b) { return a.ptr.key < b.ptr.key; });
  // Each leaf's keys end where the next one's begin, or before: none is met twice.
  for (size_t k = 1; k < c->leaves_.size(); ++k)
    if (!c->leaves_[k - 1].end || c->leaves_[k].ptr.key < *c->leaves_[k - 1].end)
      return Status::Corrupt("btrfs tree leaves whose keys overlap");
  // An older leaf on a device that cannot be opened is left out: the search reads the
  // inodes it shares.
  std::erase_if(c->leaves_, [&](const TreeBlock& b) { return !b.shared.empty() && !c->devices_.Get(b.devid).ok(); });
  for (const TreeBlock& b : c->leaves_) OANS_RETURN_IF_ERROR(c->devices_.Get(b.devid).status());
  return c;
}

size_t ChangedLeaves::PlanWindow(size_t from, size_t end, std::vector<Request>* reads, std::vector<size_t>* at) const {
  const uint64_t node = info_.node_size;
  const size_t to = std::min(end, from + size_t(kWindowBytes / node));
  std::vector<size_t> order(to - from);
  std::iota(order.begin(), order.end(), from);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(leaves_[a].devid, leaves_[a].physical) < std::tie(leaves_[b].devid, leaves_[b].physical);
  });
  reads->clear();
  at->assign(to - from, 0);
  uint64_t filled = 0, gaps = 0;
  for (size_t i : order) {
    const TreeBlock& b = leaves_[i];
    Request* last = reads->empty() ? nullptr : &reads->back();
    const uint64_t gap = last && last->devid == b.devid && b.physical >= last->physical + last->length
                             ? b.physical - (last->physical + last->length)
                             : ~uint64_t(0);
    if (gap <= kGapRead && gap <= kGapBytes - gaps) {  // read through the gap: one request
      gaps += gap;
      filled += gap;
      last->length += gap + node;
    } else {
      reads->push_back({b.devid, b.physical, node, filled});
    }
    (*at)[i - from] = filled;
    filled += node;
  }
  return to;
}

Status ChangedLeaves::ReadWindow(const std::vector<Request>& reads, char* buf) const {
  for (const Request& q : reads) {
    OANS_ASSIGN_OR_RETURN(int dev, devices_.Get(q.devid));
    OANS_ASSIGN_OR_RETURN(size_t n, sys_.Pread(dev, buf + q.at, q.length, q.physical));
    if (n != q.length) return Status::Io("a read of btrfs tree blocks came back short", EIO);
    stats_->requests++;
    stats_->bytes += q.length;
  }
  return Status::Ok();
}

Status ChangedLeaves::Search(const BtrfsKey& from, uint64_t last, const BtrfsVisitor& visit) const {
  stats_->searched++;
  BtrfsSearch s;
  s.min = from;
  s.max = {last, 255, ~uint64_t(0)};
  s.min_transid = since_;
  s.buffer_bytes = kSearchBuffer;
  return sys_.TreeSearch(fd_, s, visit);
}

Status ChangedLeaves::Visit(uint64_t first, uint64_t last, const BtrfsVisitor& visit) const {
  const BtrfsKey lo{first, 0, 0};
  // The leaves holding keys from `lo` to `last`: the one `lo` falls in, up to the first
  // that begins past `last`.
  auto begins_after = [](const BtrfsKey& k, const TreeBlock& b) { return k < b.ptr.key; };
  size_t i = size_t(std::upper_bound(leaves_.begin(), leaves_.end(), lo, begins_after) - leaves_.begin());
  if (i > 0 && (!leaves_[i - 1].end || lo < *leaves_[i - 1].end)) --i;
  const size_t end = size_t(std::upper_bound(leaves_.begin(), leaves_.end(), BtrfsKey{last, 255, ~uint64_t(0)},
                                             begins_after) - leaves_.begin());
  if (i >= end) return Status::Ok();
  std::unique_ptr<char, FreeAligned> buf(static_cast<char*>(std::aligned_alloc(4096, kWindowBytes + kGapBytes)));
  if (!buf) return Status::Io("a buffer for btrfs tree blocks", ENOMEM);
  std::vector<Request> reads;
  std::vector<size_t> at;
  std::vector<BtrfsItem> items;
  BtrfsNode header;
  while (i < end) {
    const size_t to = PlanWindow(i, end, &reads, &at);
    const bool read = ReadWindow(reads, buf.get()).ok();
    for (size_t k = i; k < to; ++k) {
      const TreeBlock& b = leaves_[k];
      const std::string_view block(buf.get() + at[k - i], info_.node_size);
      // Not the leaf laid out, or not readable now: the live tree's search from here.
      bool good = read && CheckTreeBlock(info_, b, 0, block, &header).ok() &&
                  DecodeLeafItems(block, b.ptr.generation, &items);
      good = good && (items.empty() || (!(items.front().key < b.ptr.key) && (!b.end || items.back().key < *b.end)));
      if (!good) return Search(std::max(lo, b.ptr.key), last, visit);
      stats_->leaves++;
      const std::vector<uint64_t>& shared = b.shared;  // an older leaf: those inodes' items alone
      for (const BtrfsItem& item : items) {
        if (item.key.objectid < first) continue;
        if (item.key.objectid > last) return Status::Ok();
        if (!shared.empty() && std::find(shared.begin(), shared.end(), item.key.objectid) == shared.end()) continue;
        if (!visit(item)) return Status::Ok();
      }
    }
    i = to;
  }
  return Status::Ok();
}

}  // namespace oans
