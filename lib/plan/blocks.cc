#include "lib/plan/blocks.h"

#include <cstdlib>

#include "lib/plan/frees.h"
#include "lib/plan/ops.h"

namespace oans {
namespace {

// One group of identical blocks: pairs of its first block with every other one.
Status PairGroup(PlanState& st, const std::vector<BlockKey>& group, ExternalSorter<PairKey, PairLess>* pairs) {
  if (group.size() < 2) return Status::Ok();
  const uint32_t bs = st.header.block_size;
  bool any_changed = false, counted = false;
  for (const auto& b : group) any_changed |= st.changed[b.file];
  const BlockKey& s = group.front();
  for (size_t k = 1; k < group.size() && any_changed; ++k) {
    const BlockKey& d = group[k];
    if (d.file == s.file && d.blk == s.blk) continue;
    if (!counted) {
      st.stats->block_groups++;
      counted = true;
    }
    st.stats->duplicate_bytes += bs;
    if (s.physical == d.physical && s.physical_end == d.physical_end) {
      st.stats->shared_bytes += bs;
      continue;
    }
    OANS_RETURN_IF_ERROR(pairs->Add({s.file, d.file, s.blk, d.blk}));
  }
  return Status::Ok();
}

}  // namespace

Status PairBlocks(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs) {
  std::vector<BlockKey> group;
  uint64_t done = 0;
  OANS_RETURN_IF_ERROR(st.blocks.Drain([&](const BlockKey& b) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (st.is_dest[b.file] || st.dropped[b.file]) return Status::Ok();
    if (!group.empty() && !(b.pair == group.front().pair && b.hash == group.front().hash)) {
      OANS_RETURN_IF_ERROR(PairGroup(st, group, pairs));
      group.clear();
    }
    group.push_back(b);
    return Status::Ok();
  }));
  return PairGroup(st, group, pairs);
}

// Consecutive pairs with the same offset between source and destination form a run.
Status RunsOfPairs(PlanState& st, ExternalSorter<PairKey, PairLess>* pairs, ExternalSorter<RunKey, RunLess>* runs) {
  const uint32_t bs = st.header.block_size;
  PairRuns kept(st, runs, bs, /*partial=*/false);  // PairGroup counted the blocks
  bool open = false;
  PairKey first{}, prev{};
  uint64_t len = 0, max_run = 0, done = 0;
  auto close_run = [&]() -> Status {
    if (!open) return Status::Ok();
    open = false;
    return kept.Add({first.src, first.dst, uint64_t(first.sblk) * bs, len * bs, uint64_t(first.dblk) * bs});
  };
  OANS_RETURN_IF_ERROR(pairs->Drain([&](const PairKey& p) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (open && p.src == first.src && p.dst == first.dst && p.delta() == first.delta() && p.sblk == prev.sblk + 1 &&
        len < max_run) {
      prev = p;
      len++;
      return Status::Ok();
    }
    OANS_RETURN_IF_ERROR(close_run());
    open = true;
    first = prev = p;
    len = 1;
    // Within one file, a run may not overlap its own copy.
    max_run = p.src == p.dst ? uint64_t(std::abs(p.delta())) : UINT64_MAX;
    return Status::Ok();
  }));
  OANS_RETURN_IF_ERROR(close_run());
  return kept.Finish();
}

// One unit for every source range, with all its destinations.
Status UnitsOfRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* runs) {
  Unit u;
  bool have = false;
  uint64_t done = 0;
  OANS_RETURN_IF_ERROR(runs->Drain([&](const RunKey& r) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (have && r.src == u.src && r.offset == u.offset && r.length == u.length) {
      u.dests.push_back({r.dst, r.dst_offset, 0});
      return Status::Ok();
    }
    if (have) OANS_RETURN_IF_ERROR(AddOps(st, u));
    have = true;
    u.src = r.src;
    u.offset = r.offset;
    u.length = r.length;
    u.dests.assign(1, {r.dst, r.dst_offset, 0});
    return Status::Ok();
  }));
  return have ? AddOps(st, u) : Status::Ok();
}

}  // namespace oans
