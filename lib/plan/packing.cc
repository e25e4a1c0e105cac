#include "lib/plan/packing.h"

#include <algorithm>
#include <tuple>

namespace oans {
namespace {

// What the packer holds per operation: the key, where its destinations start, a flag,
// and per range (the source and each destination) the range and the destination's
// offset; twice that, for the vectors' growth.
constexpr uint64_t kBytesPerOp = 2 * (sizeof(OpKey) + 4 + 1);
constexpr uint64_t kBytesPerRange = 2 * (24 + 8);

// The end of a range, rounded up to a block; at most UINT64_MAX, whatever offset and
// length an index gave.
uint64_t BlockEnd(uint64_t physical, uint64_t length) {
  if (length > UINT64_MAX - 4095 - physical) return UINT64_MAX;
  return (physical + length + 4095) / 4096 * 4096;
}

// A physical offset the scan knew (not 0, not UINT64_MAX: a hole or unknown, ranges.h).
bool Known(uint64_t physical) { return physical != 0 && physical != UINT64_MAX; }

}  // namespace

RoundPacker::RoundPacker(uint64_t round_size, DestsOf dests_of, OnRound round)
    : round_size_(round_size),
      file_bytes_(std::max<uint64_t>(1, round_size / kRoundFiles)),
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
  // A place not known is next to nothing. A rewrite's destination is its source's range
  // (the copy goes elsewhere): one range.
  if (Known(k.physical)) ranges_.push_back({k.physical, BlockEnd(k.physical, k.length), id, true});
  for (size_t i = dest_from_.back(); i < dest_at_.size(); ++i)
    if (Known(dest_at_[i]) && dest_at_[i] != k.physical)
      ranges_.push_back({dest_at_[i], BlockEnd(dest_at_[i], k.length), id, false});
  held_ += kBytesPerOp + kBytesPerRange * (1 + dest_at_.size() - dest_from_.back());
  return held_ >= kBatchBytes ? Pack() : Status::Ok();
}

Status RoundPacker::Finish() { return Pack(); }

void RoundPacker::Neighbours(uint64_t start, uint64_t end, uint32_t pass, uint64_t* room,
                             std::vector<uint32_t>* out) {
  auto at = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                             [](const Range& r, uint64_t s) { return r.start < s; });
  // After it: the first range starting at or past its end, and those following on, no
  // more of them than the room (the walk stays short where a long run of sources
  // follows). A run longer than the room is no gap in the round's reads but a part of
  // the disk of its own: left for its turn. What a run takes is marked taken at once, so
  // that no other walk finds it again.
  auto take = [&](size_t from, uint64_t found) {
    if (found > *room) {
      out->resize(from);
      return;
    }
    *room -= found;
    for (size_t k = from; k < out->size(); ++k) taken_[(*out)[k]] = true;
  };
  auto after = std::lower_bound(at, ranges_.end(), end, [](const Range& r, uint64_t s) { return r.start < s; });
  size_t from = out->size();
  uint64_t found = 0, reach = end;
  for (; after != ranges_.end() && after->start <= reach + kNear && Candidate(*after, pass); ++after) {
    if ((found += Weight(ops_[after->op])) > *room) break;
    out->push_back(after->op);
    reach = std::max(reach, after->end);
  }
  take(from, found);
  // Before it: the ranges ending within kNear of its start, back along those.
  from = out->size();
  found = 0;
  for (reach = start; at != ranges_.begin();) {
    --at;
    if (at->end + kNear < reach || !Candidate(*at, pass)) break;
    if ((found += Weight(ops_[at->op])) > *room) break;
    out->push_back(at->op);
    reach = std::min(reach, at->start);
  }
  take(from, found);
}

// Operation `first` and the gaps its destinations leave (the operations whose sources
// fill them), then theirs, depth first; no more than a round holds (but `first`, which
// the ops stage made fit one); marked taken. The room is what the round has left once
// the operations found so far are in: those found together fit together.
void RoundPacker::Collect(uint32_t first, std::vector<uint32_t>* cluster) {
  std::vector<uint32_t> todo{first}, next;
  const uint32_t pass = ops_[first].pass;
  uint64_t room = round_size_ > Weight(ops_[first]) ? round_size_ - Weight(ops_[first]) : 0;
  taken_[first] = true;
  cluster->clear();
  while (!todo.empty()) {
    const uint32_t j = todo.back();
    todo.pop_back();
    cluster->push_back(j);
    const uint32_t to = j + 1 < dest_from_.size() ? dest_from_[j + 1] : uint32_t(dest_at_.size());
    next.clear();
    for (uint32_t d = dest_from_[j]; d < to; ++d)
      if (Known(dest_at_[d])) Neighbours(dest_at_[d], BlockEnd(dest_at_[d], ops_[j].length), pass, &room, &next);
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
    // not fit this one. Together they fit a round (Collect).
    Collect(i, &cluster);
    uint64_t together = 0;
    for (uint32_t j : cluster) together += Weight(ops_[j]);
    if (!round.empty() && bytes + together > round_size_) OANS_RETURN_IF_ERROR(emit());
    bytes += together;
    round.insert(round.end(), cluster.begin(), cluster.end());
    alongside_ += cluster.size() - 1;
  }
  if (!round.empty()) OANS_RETURN_IF_ERROR(emit());
  ops_.clear();
  ranges_.clear();
  dest_at_.clear();
  dest_from_.clear();
  held_ = 0;
  return Status::Ok();
}

}  // namespace oans
