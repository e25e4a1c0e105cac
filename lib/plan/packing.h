// Which operations go into which round. The operations come in the order of the ops
// stage (by pass, then by the source's physical offset) and a round takes them in that
// order up to --round-size bytes read. With each operation it takes, a round also takes
// the gaps that operation's destinations leave in its reads: the operations not yet
// taken, of the same pass, whose sources lie right next to one of its destinations on
// the disk (within 64 KiB after its end, or before its start, and on along sources that
// follow each other there, up to the first range that is not such a source), and the
// gaps theirs leave. A run of sources longer than the round has room for (beside the
// operation and the other gaps it fills) is no gap but a part of the disk of its own,
// and waits for its turn, whole. An operation and the gaps it fills go into one round:
// the next one when they do not fit this one. A round may then end less full.
// On the kernel's tree x 2, the rounds are as many as without the gaps.
// Where a copy of a directory's files lies among another directory's files (the kernel's
// tools/ headers, copies of include/, among the other files of tools/), their ranges are
// thus read by the round that reads their neighbours, and a round's reads do not skip
// over ranges that a later round comes back for, one seek each.
//
// Operations are packed in batches of kBatchBytes (about 60,000 operations).
// A batch ends a round; operations pair up only within a batch.
// The batch does not depend on --memory: every budget packs the same.
// It is part of the planner's fixed overhead (budget.h).
// The packing is deterministic: counting and writing pack the same way.
// Within a round the operations are in the ops stage's order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/base/status.h"
#include "lib/plan/keys.h"

namespace oans {

class RoundPacker {
 public:
  // `dests_of(key, out)` fills the destinations' physical offsets of an operation with
  // several destinations (from the operation store). Each round is handed to `round` as
  // its operations, in order.
  using DestsOf = std::function<Status(const OpKey&, std::vector<uint64_t>*)>;
  using OnRound = std::function<Status(const std::vector<OpKey>&)>;
  RoundPacker(uint64_t round_size, DestsOf dests_of, OnRound round);

  Status Add(const OpKey& k);
  Status Finish();  // packs and hands out what is left

  // Operations taken into a round with another operation rather than in their turn.
  uint64_t taken_alongside() const { return alongside_; }

  // Ranges within this many bytes after another's end count as next to it.
  static constexpr uint64_t kNear = 64 << 10;
  // What a batch holds.
  static constexpr uint64_t kBatchBytes = 16 << 20;

 private:
  struct Range {
    uint64_t start, end;
    uint32_t op;
    bool source;
  };
  Status Pack();
  void Collect(uint32_t first, std::vector<uint32_t>* cluster);
  // The operations whose sources lie next to [start, end), not yet taken, of `pass`,
  // nearest first, on each side where they are no more than `room` bytes; marked taken,
  // their bytes taken off the room.
  void Neighbours(uint64_t start, uint64_t end, uint32_t pass, uint64_t* room, std::vector<uint32_t>* out);
  bool Candidate(const Range& r, uint32_t pass) const { return r.source && !taken_[r.op] && ops_[r.op].pass == pass; }

  uint64_t round_size_;
  uint64_t held_ = 0;  // bytes the batch holds
  DestsOf dests_of_;
  OnRound on_round_;
  std::vector<OpKey> ops_;           // the batch, in the order added
  std::vector<Range> ranges_;        // their sources and destinations, by start once packing
  std::vector<uint64_t> dest_at_;    // every operation's destinations' physical offsets
  std::vector<uint32_t> dest_from_;  // by operation: where its destinations start in dest_at_
  std::vector<bool> taken_;
  std::vector<uint64_t> scratch_;
  std::vector<OpKey> round_;
  uint64_t alongside_ = 0;
};

}  // namespace oans
