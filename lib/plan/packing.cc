#include "lib/plan/packing.h"

#include <algorithm>
#include <tuple>

namespace oans {
namespace {

// What the packer holds per operation: the key, its source and destination ranges, the
// destinations' offsets, a flag (an estimate for one destination; more are rarer).
constexpr uint64_t kBytesPerOp = sizeof(OpKey) + 2 * 24 + 8 + 4 + 1;

uint64_t BlockEnd(uint64_t physical, uint64_t length) { return (physical + length + 4095) / 4096 * 4096; }

}  // namespace

RoundPacker::RoundPacker(uint64_t round_size, uint64_t memory, DestsOf dests_of, OnRound round)
    : round_size_(round_size),
      batch_(size_t(std::max<uint64_t>(kMinBatch, memory / 4 / kBytesPerOp))),
      dests_of_(std::move(dests_of)),
      on_round_(std::move(round)) {}

Status RoundPacker::Add(const OpKey& k) {
  const uint32_t id = uint32_t(ops_.size());
  ops_.push_back(k);
  dest_from_.push_back(uint32_t(dest_at_.size()));
  if (k.dests > 1) {
    OANS_RETURN_IF_ERROR(dests_of_(k, &scratch_));
    dest_at_.insert(dest_at_.end(), scratch_.begin(), scratch_.end());
  } else {
    dest_at_.push_back(k.dest_physical);
  }
  // Physical offset 0 is "not known" (a file the scan could not map): not next to anything.
  if (k.physical) ranges_.push_back({k.physical, BlockEnd(k.physical, k.length), id, true});
  for (size_t i = dest_from_.back(); i < dest_at_.size(); ++i)
    if (dest_at_[i]) ranges_.push_back({dest_at_[i], BlockEnd(dest_at_[i], k.length), id, false});
  return ops_.size() >= batch_ ? Pack() : Status::Ok();
}

Status RoundPacker::Finish() { return Pack(); }

void RoundPacker::Neighbours(uint64_t start, uint64_t end, uint32_t pass, uint64_t room,
                             std::vector<uint32_t>* out) const {
  auto at = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                             [](const Range& r, uint64_t s) { return r.start < s; });
  // After it: the first range starting at or past its end, and those following on; no
  // further than the round has room for (the walk stays short where a long run of
  // sources follows).
  auto after = std::lower_bound(at, ranges_.end(), end, [](const Range& r, uint64_t s) { return r.start < s; });
  const size_t from = out->size();
  uint64_t found = 0, reach = end;
  for (; after != ranges_.end() && after->start <= reach + kNear && Candidate(*after, pass); ++after) {
    if ((found += ops_[after->op].bytes()) > room) break;
    out->push_back(after->op);
    reach = std::max(reach, after->end);
  }
  // A run longer than the room is no gap in this round's reads but a part of the disk
  // of its own: left for its turn.
  if (found > room) out->resize(from);
  // Before it: the ranges ending within kNear of its start, back along those.
  const size_t back = out->size();
  found = 0;
  for (reach = start; at != ranges_.begin();) {
    --at;
    if (at->end + kNear < reach || !Candidate(*at, pass)) break;
    if ((found += ops_[at->op].bytes()) > room) break;
    out->push_back(at->op);
    reach = std::min(reach, at->start);
  }
  if (found > room) out->resize(back);
}

// Operation `first` and the gaps its destinations leave (the operations whose sources
// fill them), then theirs, depth first, up to a round's size of them; marked taken.
void RoundPacker::Collect(uint32_t first, std::vector<uint32_t>* cluster) {
  std::vector<uint32_t> todo{first}, next;
  const uint32_t pass = ops_[first].pass;
  uint64_t bytes = 0;
  cluster->clear();
  while (!todo.empty() && bytes < round_size_) {
    const uint32_t j = todo.back();
    todo.pop_back();
    if (taken_[j]) continue;
    taken_[j] = true;
    bytes += ops_[j].bytes();
    cluster->push_back(j);
    const uint32_t to = j + 1 < dest_from_.size() ? dest_from_[j + 1] : uint32_t(dest_at_.size());
    const uint64_t room = bytes < round_size_ ? round_size_ - bytes : 0;
    next.clear();
    for (uint32_t d = dest_from_[j]; d < to; ++d)
      if (dest_at_[d]) Neighbours(dest_at_[d], BlockEnd(dest_at_[d], ops_[j].length), pass, room, &next);
    todo.insert(todo.end(), next.rbegin(), next.rend());
  }
}

Status RoundPacker::Pack() {
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
    return std::tie(a.start, a.end, a.op, a.source) < std::tie(b.start, b.end, b.op, b.source);
  });
  taken_.assign(ops_.size(), false);
  std::vector<uint32_t> round;
  uint64_t bytes = 0;
  auto emit = [&]() -> Status {
    std::sort(round.begin(), round.end());  // the order added: the ops stage's
    round_.clear();
    for (uint32_t j : round) round_.push_back(ops_[j]);
    round.clear();
    bytes = 0;
    return on_round_(round_);
  };
  std::vector<uint32_t> cluster;
  for (uint32_t i = 0; i < ops_.size(); ++i) {
    if (taken_[i]) continue;
    // An operation and the gaps it fills go into one round: the next one when they do
    // not fit this one; what does not fit a round at all is left for its turn.
    Collect(i, &cluster);
    uint64_t together = 0;
    for (uint32_t j : cluster) together += ops_[j].bytes();
    if (!round.empty() && bytes + together > round_size_) OANS_RETURN_IF_ERROR(emit());
    for (uint32_t j : cluster) {
      if (j != i && bytes + ops_[j].bytes() > round_size_) {
        taken_[j] = false;
        continue;
      }
      bytes += ops_[j].bytes();
      round.push_back(j);
      if (j != i) alongside_++;
    }
  }
  if (!round.empty()) OANS_RETURN_IF_ERROR(emit());
  ops_.clear();
  ranges_.clear();
  dest_at_.clear();
  dest_from_.clear();
  return Status::Ok();
}

}  // namespace oans
