#include "lib/plan/snapshots.h"

#include <algorithm>

#include "lib/base/units.h"

namespace oans {
namespace {

constexpr int64_t kMargin = 2;  // disk bytes freed per byte of metadata, at least

// The metadata one destination file of subvolume `fs` costs, on average.
int64_t FileCost(const PlanState& st, const SpaceTally& t, uint32_t fs) {
  auto leaves = t.leaves.find(fs);
  auto dests = t.dests.find(fs);
  const int64_t n = dests == t.dests.end() ? 1 : int64_t(std::max<uint64_t>(1, dests->second));
  const int64_t leaf = leaves == t.leaves.end() ? 0 : LeafCost(st, fs, leaves->second.size());
  return leaf / n + kSpaceRefBytes * int64_t(std::max<uint32_t>(1, SubvolumeOf(st, fs).metadata_copies));
}

// One pass of auto: files whose extents are not worth freeing, or that free nothing
// and cost metadata, are left alone. True when it left a file alone.
Result<bool> AutoPass(PlanState& st, const SpaceTally& t) {
  std::vector<char> frees(st.left_alone.size(), 0);  // by file: frees an extent kept
  std::vector<char> costs(st.left_alone.size(), 0);  // by file: in a shared tree
  for (size_t i = 0; i < t.drops.size();) {
    const size_t e = t.drops[i].extent, from = i;
    uint32_t dropped = 0;
    int64_t cost = 0;
    for (; i < t.drops.size() && t.drops[i].extent == e; ++i) {
      OANS_ASSIGN_OR_RETURN(auto d, st.details.Get(t.drops[i].file));
      costs[t.drops[i].file] = SubvolumeOf(st, d->fs).shared;
      if (!t.drops[i].all) continue;
      dropped++;
      cost += FileCost(st, t, d->fs);
    }
    const auto& c = st.census[e];
    const bool worth = dropped > 0 && dropped >= c.refs && int64_t(c.disk_bytes) > kMargin * cost;
    for (size_t j = from; worth && j < i; ++j) frees[t.drops[j].file] = 1;
  }
  bool changed = false;
  for (const auto& d : t.drops)
    if (costs[d.file] && !frees[d.file] && !st.left_alone[d.file]) st.left_alone[d.file] = changed = true;
  return changed;
}

}  // namespace

Status ApplySnapshotPolicy(PlanState& st, std::string* said) {
  said->clear();
  st.left_alone.assign(st.details.size(), false);
  SpaceTally t;
  OANS_RETURN_IF_ERROR(TallySpace(st, &t));
  if (st.o.snapshots == SnapshotPolicy::kAll) {
    st.left_alone.clear();
    return SpaceFigures(st, t);
  }
  const uint64_t before = uint64_t(t.planned);
  const bool weighed = !st.census.empty();
  if (st.o.snapshots == SnapshotPolicy::kNone || !weighed) {
    // Without the census nothing can be weighed: what snapshots share stays as it is.
    for (const uint32_t file : t.dest_files) {
      OANS_ASSIGN_OR_RETURN(auto f, st.details.Get(file));
      const IndexSubvolume sv = SubvolumeOf(st, f->fs);
      const bool cannot_weigh = !weighed && st.o.snapshots == SnapshotPolicy::kAuto;
      if (sv.read_only || (cannot_weigh && sv.shared)) st.left_alone[file] = true;
    }
  } else {
    for (int pass = 0; pass < 4; ++pass) {
      OANS_ASSIGN_OR_RETURN(bool changed, AutoPass(st, t));
      if (!changed) break;
      t = SpaceTally();
      OANS_RETURN_IF_ERROR(TallySpace(st, &t));
    }
  }
  t = SpaceTally();
  OANS_RETURN_IF_ERROR(TallySpace(st, &t));
  OANS_RETURN_IF_ERROR(SpaceFigures(st, t));
  if (st.o.snapshots == SnapshotPolicy::kAuto && st.stats->net_bytes < 0) {
    for (const auto& d : t.drops) {
      OANS_ASSIGN_OR_RETURN(auto f, st.details.Get(d.file));
      if (SubvolumeOf(st, f->fs).shared) st.left_alone[d.file] = true;
    }
    t = SpaceTally();
    OANS_RETURN_IF_ERROR(TallySpace(st, &t));
    OANS_RETURN_IF_ERROR(SpaceFigures(st, t));
  }
  st.stats->planned_bytes = uint64_t(t.planned);
  st.stats->left_alone_bytes = before - std::min(before, uint64_t(t.planned));
  const std::string left = FormatSize(st.stats->left_alone_bytes);
  if (!st.stats->left_alone_bytes) return Status::Ok();
  if (st.o.snapshots == SnapshotPolicy::kNone)
    *said = left + " left alone in read-only snapshots (--snapshots=none)";
  else if (!weighed)
    *said = left + " left alone in snapshots and trees shared with them: the index has no census of " +
            "references to weigh them (--snapshots=all shares them)";
  else
    *said = left + " left alone in snapshots and trees shared with them: sharing it would cost more " +
            "metadata than it frees (--snapshots=auto)";
  return Status::Ok();
}

}  // namespace oans
