#include "lib/plan/source.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "lib/plan/ops.h"
#include "lib/plan/ranges.h"

namespace oans {

uint32_t ChooseSource(const std::vector<uint32_t>& members, const std::function<const Detail&(uint32_t)>& at) {
  // Members in physical order, then in the order the indexes list them (the ids'
  // order); then grouped by layout, keeping that order within each layout.
  std::vector<uint32_t> by_sig = members;
  std::sort(by_sig.begin(), by_sig.end(), [&](uint32_t x, uint32_t y) {
    return std::tie(at(x).first_physical, x) < std::tie(at(y).first_physical, y);
  });
  uint32_t src = by_sig.front();
  std::stable_sort(by_sig.begin(), by_sig.end(),
                   [&](uint32_t a, uint32_t b) { return LayoutLess(at(a).extents, at(b).extents); });
  size_t best = 1;
  for (size_t a = 0; a < by_sig.size();) {
    size_t b = a + 1;
    while (b < by_sig.size() && SameLayout(at(by_sig[a]).extents, at(by_sig[b]).extents)) ++b;
    if (b - a > best) {
      best = b - a;
      src = *std::min_element(by_sig.begin() + long(a), by_sig.begin() + long(b), [&](uint32_t x, uint32_t y) {
        return std::tie(at(x).first_physical, x) < std::tie(at(y).first_physical, y);
      });
    }
    a = b;
  }
  // A file with more names is the source: hardlink mode never links a destination that
  // has other names (the others would keep the old file).
  uint32_t most = at(src).nlink;
  for (uint32_t m : members) most = std::max(most, at(m).nlink);
  if (most == at(src).nlink) return src;
  uint32_t best_linked = UINT32_MAX;
  for (uint32_t m : members)
    if (at(m).nlink == most &&
        (best_linked == UINT32_MAX ||
         std::tie(at(m).first_physical, m) < std::tie(at(best_linked).first_physical, best_linked)))
      best_linked = m;
  return best_linked;
}

namespace {

// The ranges of destination `d` not yet sharing the source's data, block aligned; adds
// to the duplicate and shared byte counts.
std::vector<Range> Unshared(PlanState& st, const Detail& s, const Detail& d, uint64_t align) {
  st.stats->duplicate_bytes += s.size;
  if (SameLayout(s.extents, d.extents)) {
    st.stats->shared_bytes += s.size;
    return {};
  }
  auto shared = SharedRanges(s.extents, d.extents, s.size);
  for (const auto& r : shared) st.stats->shared_bytes += r.length;
  auto unshared = UnsharedRanges(shared, s.size, align);
  // Holes in the source have nothing to share.
  if (!s.extents.empty()) unshared = IntersectRanges(unshared, DataRanges(s.extents, s.size, align));
  return unshared;
}

}  // namespace

Status PlanWholeGroup(PlanState& st, const std::vector<uint32_t>& ids, std::vector<GroupReport>* reports) {
  bool any_changed = false;
  for (uint32_t m : ids) any_changed |= st.changed[m];
  if (!any_changed) return Status::Ok();
  st.stats->whole_groups++;
  std::vector<std::shared_ptr<const Detail>> files;
  std::unordered_map<uint32_t, size_t> slot;
  for (uint32_t m : ids) {
    OANS_ASSIGN_OR_RETURN(auto d, st.details.Get(m));
    slot[m] = files.size();
    files.push_back(d);
  }
  auto at = [&](uint32_t id) -> const Detail& { return *files[slot[id]]; };
  const uint32_t src = ChooseSource(ids, at);
  const Detail& s = at(src);
  const uint64_t align = st.header.filesystems[s.fs].block_size ? st.header.filesystems[s.fs].block_size : 4096;
  GroupReport report;
  report.size = s.size;
  if (reports) {
    OANS_ASSIGN_OR_RETURN(auto p, st.details.Path(src));
    report.source = std::move(p);
  }
  // Destinations with the same unshared ranges share one operation.
  std::map<std::pair<uint64_t, uint64_t>, Unit> by_range;
  // Destinations in physical order, then id order. (Members that share one layout, all
  // of a group that needs no details, start at one address: id order is this order.)
  std::vector<uint32_t> members = ids;
  std::sort(members.begin(), members.end(), [&](uint32_t x, uint32_t y) {
    return std::tie(at(x).first_physical, x) < std::tie(at(y).first_physical, y);
  });
  for (uint32_t d : members) {
    if (d == src) continue;
    st.is_dest[d] = true;
    const std::vector<Range> unshared = Unshared(st, s, at(d), align);
    if (reports) {
      OANS_ASSIGN_OR_RETURN(auto p, st.details.Path(d));
      report.dests.push_back(std::move(p));
      report.dest_shared.push_back(unshared.empty());
    }
    for (const auto& r : unshared) {
      Unit& u = by_range[{r.offset, r.length}];
      u.src = src;
      u.offset = r.offset;
      u.length = r.length;
      u.dests.push_back({d, r.offset, 0});
    }
  }
  for (auto& [k, u] : by_range) OANS_RETURN_IF_ERROR(AddOps(st, u));
  if (reports) reports->push_back(std::move(report));
  return Status::Ok();
}

}  // namespace oans
