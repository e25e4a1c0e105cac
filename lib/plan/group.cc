#include "lib/plan/group.h"

#include <functional>

#include "lib/plan/source.h"

namespace oans {
namespace {

using GroupVisit =
    std::function<Status(const std::vector<uint32_t>& ids, bool one_layout, const WholeKey& head)>;

// Walks the groups: `visit(ids, one_layout, head)` for every group of two or more files
// not dropped (head: the first member's key). The last walk (`take`) gives the keys' memory back as it goes.
Status WalkGroups(PlanState& st, const GroupVisit& visit, bool take) {
  const uint64_t total = st.whole.size();
  OANS_ASSIGN_OR_RETURN(auto keys, take ? st.whole.Take() : st.whole.Read());
  Stream<WholeKey>& s = *keys;
  std::vector<uint32_t> group;
  WholeKey head{};
  bool one_layout = true;
  uint64_t done = 0;
  auto flush = [&]() -> Status {
    Status r = group.size() >= 2 ? visit(group, one_layout, head) : Status::Ok();
    group.clear();
    return r;
  };
  for (; s.Valid(); s.Next()) {
    const WholeKey& k = s.key();
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (done % 65536 == 0) st.observer->Progress({"group", 0, 0, done, total});
    if (st.dropped[k.id]) continue;
    if (!group.empty() && !(k.pair == head.pair && k.size == head.size && k.hash == head.hash))
      OANS_RETURN_IF_ERROR(flush());
    if (group.empty()) {
      head = k;
      one_layout = k.layout != 0;
    } else if (k.layout != head.layout) {
      one_layout = false;
    }
    group.push_back(k.id);
  }
  OANS_RETURN_IF_ERROR(s.status());
  return flush();
}

bool AnyChanged(const PlanState& st, const std::vector<uint32_t>& ids) {
  for (uint32_t m : ids)
    if (st.changed[m]) return true;
  return false;
}

}  // namespace

Status DropDuplicateInodes(PlanState& st) {
  st.stats->files = st.details.size();
  InodeKey last{0, UINT32_MAX, 0};
  uint64_t done = 0;
  OANS_RETURN_IF_ERROR(st.inodes.Drain([&](const InodeKey& k) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    if (k.fs_key == last.fs_key && k.ino == last.ino) {
      st.dropped[k.id] = true;
      st.stats->duplicate_inodes++;
    } else {
      last = k;
    }
    return Status::Ok();
  }));
  st.stats->files = st.details.size() - st.stats->duplicate_inodes;
  return Status::Ok();
}

Status GroupWholeFiles(PlanState& st, std::vector<GroupReport>* reports) {
  // Groups where every member already shares one extent layout need no details.
  // Files paired by size alone are not known to be duplicates: a report leaves them out.
  auto wanted = [&](const WholeKey& head) { return !(reports && PairedBySize(head.pair)); };
  auto needs_details = [&](const std::vector<uint32_t>& ids, bool one_layout) {
    return !(one_layout && !reports) && AnyChanged(st, ids);
  };
  if (st.details.spilled() || (reports && st.details.paths_spilled())) {
    // The details or the reports' paths went to disk: fetch those the groups need in one
    // sequential pass.
    std::vector<bool> needed(st.details.size(), false);
    auto mark = [&](const std::vector<uint32_t>& ids, bool one_layout, const WholeKey& head) {
      if (wanted(head) && needs_details(ids, one_layout))
        for (uint32_t m : ids) needed[m] = true;
      return Status::Ok();
    };
    OANS_RETURN_IF_ERROR(WalkGroups(st, mark, false));
    OANS_RETURN_IF_ERROR(st.details.Preload(needed, st.budget[Use::kPreload], reports != nullptr, st.o.stop));
  }
  st.grouped.assign(st.details.size(), false);
  return WalkGroups(st, [&](const std::vector<uint32_t>& ids, bool one_layout, const WholeKey& head) -> Status {
    if (!wanted(head)) return Status::Ok();
    for (uint32_t m : ids) st.grouped[m] = true;
    const uint64_t dest_bytes = head.size * (ids.size() - 1);
    if (PairedBySize(head.pair) && AnyChanged(st, ids)) st.stats->size_paired_bytes += dest_bytes;
    if (needs_details(ids, one_layout)) return PlanWholeGroup(st, ids, reports);
    if (!AnyChanged(st, ids)) return Status::Ok();
    st.stats->whole_groups++;
    for (size_t i = 1; i < ids.size(); ++i) st.is_dest[ids[i]] = true;
    st.stats->duplicate_bytes += dest_bytes;
    st.stats->shared_bytes += dest_bytes;
    return Status::Ok();
  }, true);
}

}  // namespace oans
