// Which operations go into which round.
// Operations come in the ops stage's order: by pass, then by source offset.
// A round takes them in that order, up to --round-size bytes read.
// With each operation, a round also takes the gaps its destinations leave.
// A gap is an operation of the same pass, not yet taken,
// whose source lies next to one of the destinations on disk.
// Next to: within 64 KiB after its end, or before its start.
// The walk goes on along sources that follow each other there.
// It stops at the first range that is no such source.
// The gaps of those operations are taken too.
// A run of sources longer than the round's room is no gap.
// It is a part of the disk of its own and waits for its turn, whole.
// An operation and its gaps go into one round.
// When they do not fit, they go into the next; a round may end less full.
// On the kernel's tree x 2, the rounds are as many as without the gaps.
// Copies of a directory's files may lie among another directory's files.
// The kernel's tools/ holds copies of include/ headers, for example.
// Their ranges are then read by the round that reads their neighbours.
// So a round's reads do not skip ranges a later round comes back for.
//
// A round also holds at most kRoundFiles files (an operation counts its source and each
// destination): apply keeps a round's files open, two or three rounds at a time, and the
// process may open only so many. So an operation weighs its bytes, or a round's share
// per file for each of its files when that is more; a round holds what weighs its size.
//
// Operations are packed in batches of kBatchBytes (about 60,000 operations).
// A batch ends a round; operations pair up only within a batch.
// The batch does not depend on --memory: every budget packs the same.
// It is part of the planner's fixed overhead (budget.h).
// The packing is deterministic: counting and writing pack the same way.
// Within a round the operations are in the ops stage's order.
#pragma once

#include <algorithm>
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
  // The files a round holds at most.
  static constexpr uint64_t kRoundFiles = 4096;

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

  // What an operation weighs in a round: its bytes, or file_bytes_ per file if more.
  uint64_t Weight(const OpKey& k) const { return std::max(k.bytes(), (1 + uint64_t(k.dests)) * file_bytes_); }

  uint64_t round_size_;
  uint64_t file_bytes_;  // a round's size over kRoundFiles
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
