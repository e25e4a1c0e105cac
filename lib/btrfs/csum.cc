#include "lib/btrfs/csum.h"

#include <linux/btrfs_tree.h>

#include <algorithm>

#include "lib/btrfs/search.h"

namespace oans {

static_assert(kBtrfsCsumCrc32c == BTRFS_CSUM_TYPE_CRC32 && kBtrfsCsumXxhash == BTRFS_CSUM_TYPE_XXHASH &&
              kBtrfsCsumSha256 == BTRFS_CSUM_TYPE_SHA256 && kBtrfsCsumBlake2 == BTRFS_CSUM_TYPE_BLAKE2);
static_assert(kBtrfsCsumTree == BTRFS_CSUM_TREE_OBJECTID && kBtrfsExtentCsum == BTRFS_EXTENT_CSUM_KEY &&
              kBtrfsExtentCsumObjectid == uint64_t(BTRFS_EXTENT_CSUM_OBJECTID));

namespace {

constexpr uint64_t kSector = 4096;

std::atomic<uint64_t> next_instance{1};

// The checksums one thread found in its last search: sectors [start, end) by address.
struct Window {
  uint64_t instance = 0;
  uint64_t start = 0, end = 0;
  CsumRun run;
};
thread_local Window window;

BtrfsSearch CsumSearch(uint64_t from, uint64_t to) {
  BtrfsSearch s;
  s.tree_id = kBtrfsCsumTree;
  s.min = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, from};
  s.max = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, to};
  return s;
}

}  // namespace

CsumTreeFacts ProbeCsumTree(Sys& sys, int fd) {
  CsumTreeFacts f;
  auto info = sys.BtrfsInfoOf(fd);
  if (!info.ok()) return f;
  f.btrfs = true;
  f.csum_type = info->csum_type;
  f.csum_size = info->csum_size;
  f.layout = f.csum_type <= kBtrfsCsumBlake2 && info->sector_size == kSector && f.csum_size >= 4;
  if (!f.layout) return f;
  f.span = uint64_t(std::max<uint32_t>(info->node_size, 4096)) / f.csum_size * kSector;
  if (sys.Syncfs(fd).ok()) {
    auto after = sys.BtrfsInfoOf(fd);
    if (after.ok()) f.committed = after->generation;
  }
  f.permitted = sys.TreeSearch(fd, CsumSearch(0, 0), [](const BtrfsItem&) { return true; }).ok();
  return f;
}

CsumTree::CsumTree(BtrfsSys& sys, const CsumTreeFacts& facts) : sys_(sys), facts_(facts), instance_(next_instance++) {}

// Through this thread's window: a search from `span` before (an item covering the start
// may begin there) to a few MiB past the end.
Status CsumTree::Lookup(int fd, uint64_t logical, uint64_t sectors, CsumRun* out) {
  Window& w = window;
  const uint64_t end = logical + sectors * kSector;
  if (w.instance != instance_ || logical < w.start || end > w.end) {
    w.instance = instance_;
    w.start = logical;
    w.end = std::max(end, logical + (4u << 20));
    const size_t n = size_t((w.end - w.start) / kSector);
    w.run.sums.assign(n, 0);
    w.run.have.assign(n, 0);
    searches_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t csum = facts_.csum_size;
    Status st = sys_.TreeSearch(fd, CsumSearch(logical > facts_.span ? logical - facts_.span : 0, w.end - 1),
                                [&](const BtrfsItem& it) {
      if (it.key.objectid != kBtrfsExtentCsumObjectid || it.key.type != kBtrfsExtentCsum) return true;
      const uint64_t count = it.data.size() / csum, at = it.key.offset;
      // Only the item's sums inside the window: an item can start far before it.
      const uint64_t first = at >= w.start ? 0 : (w.start - at + kSector - 1) / kSector;
      const uint64_t last = at >= w.end ? 0 : std::min(count, (w.end - at + kSector - 1) / kSector);
      for (uint64_t i = first; i < last; ++i) {
        const uint64_t addr = at + i * kSector;
        if (addr < w.start || addr >= w.end) continue;
        const size_t k = size_t((addr - w.start) / kSector);
        w.run.sums[k] = StoredSum(it.data.substr(size_t(i * csum), size_t(csum)));
        w.run.have[k] = 1;
      }
      return true;
    });
    if (!st.ok()) {
      w.instance = 0;
      return st;
    }
  }
  const auto from = long((logical - w.start) / kSector), to = from + long(sectors);
  out->sums.assign(w.run.sums.begin() + from, w.run.sums.begin() + to);
  out->have.assign(w.run.have.begin() + from, w.run.have.begin() + to);
  return Status::Ok();
}

uint32_t StoredSum(std::string_view csum) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4 && i < csum.size(); ++i) v |= uint32_t(uint8_t(csum[i])) << (8 * i);
  return v;
}

}  // namespace oans
