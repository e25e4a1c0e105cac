// Packing operations into rounds (lib/plan/packing.h): in the ops stage's order, and with
// an operation the not yet taken ones whose sources lie next to its destinations.
#include "lib/plan/packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// An operation of `length` bytes from `source` to one destination at `dest` (physical
// offsets), seq numbering them in the order added.
OpKey Op(uint64_t seq, uint64_t source, uint64_t dest, uint64_t length = kMiB, uint32_t pass = 1) {
  OpKey k{};
  k.physical = source;
  k.length = length;
  k.seq = seq;
  k.dest_physical = dest;
  k.source = uint32_t(2 * seq);
  k.dest = uint32_t(2 * seq + 1);
  k.dests = 1;
  k.pass = pass;
  return k;
}

struct Packed {
  std::vector<std::vector<uint64_t>> rounds;  // the seq of each operation
  uint64_t alongside = 0;
};

// Packs `ops` (in the given order) into rounds of `round_size`; `several` gives the
// destinations of operations with more than one.
Packed Pack(const std::vector<OpKey>& ops, uint64_t round_size,
            std::map<uint64_t, std::vector<uint64_t>> several = {}) {
  Packed p;
  RoundPacker packer(
      round_size,
      [&](const OpKey& k, std::vector<uint64_t>* out) {
        *out = several.at(k.seq);
        return Status::Ok();
      },
      [&](const std::vector<OpKey>& round) {
        uint64_t bytes = 0;
        p.rounds.emplace_back();
        for (const auto& k : round) {
          p.rounds.back().push_back(k.seq);
          bytes += k.bytes();
        }
        EXPECT_LE(bytes, round_size);
        return Status::Ok();
      });
  for (const auto& k : ops) EXPECT_OK(packer.Add(k));
  EXPECT_OK(packer.Finish());
  p.alongside = packer.taken_alongside();
  return p;
}

using Rounds = std::vector<std::vector<uint64_t>>;

TEST(RoundPacker, InOrderWhenNothingLiesNextToADestination) {
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, kMiB, 101 * kMiB), Op(2, 2 * kMiB, 102 * kMiB),
                       Op(3, 3 * kMiB, 103 * kMiB)},
                      4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2, 3}}));
  EXPECT_EQ(p.alongside, 0u);
}

TEST(RoundPacker, ASourceRightAfterADestinationIsReadInItsRound) {
  // Operation 2's source lies right after operation 0's destination: without it, round 0
  // would read 100-101 MiB and round 1 come back for 101-102 MiB.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB, 300 * kMiB)},
                      4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 2}, {1}}));
  EXPECT_EQ(p.alongside, 1u);
}

TEST(RoundPacker, AndRightBeforeIt) {
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 99 * kMiB, 300 * kMiB)},
                      4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 2}, {1}}));
}

TEST(RoundPacker, WithinAGapADiskReadsThrough) {
  const uint64_t gap = RoundPacker::kNear;
  auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB + gap, 300 * kMiB)},
                4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 2}, {1}}));
  p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB + gap + 4096, 300 * kMiB)},
           4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2}}));
}

TEST(RoundPacker, AlongSourcesThatFollowEachOther) {
  // Operations 2 and 3 follow operation 0's destination one after the other; operation
  // 4's destination, next, ends the run: operation 5, after it, is not taken with them
  // (it would be, and operation 1 would wait for the next round, if the run went on), but
  // with operation 4.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB, 300 * kMiB),
                       Op(3, 102 * kMiB, 301 * kMiB), Op(4, 150 * kMiB, 103 * kMiB),
                       Op(5, 104 * kMiB, 302 * kMiB)},
                      8 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1, 2, 3}, {4, 5}}));
  EXPECT_EQ(p.alongside, 3u);
}

TEST(RoundPacker, ARunLongerThanARoundIsLeftForItsTurn) {
  // Ten operations' sources follow operation 0's destination: no gap in its round's
  // reads, but a part of the disk of its own, read in its turn.
  std::vector<OpKey> ops = {Op(0, 0, 100 * kMiB), Op(1, kMiB, 200 * kMiB)};
  for (uint64_t i = 0; i < 10; ++i) ops.push_back(Op(2 + i, (101 + i) * kMiB, (300 + i) * kMiB));
  const auto p = Pack(ops, 4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}}));
  EXPECT_EQ(p.alongside, 0u);
}

TEST(RoundPacker, AnOperationAndTheGapItFillsGoTogether) {
  // Operation 3's source follows operation 2's destination; the two do not fit what is
  // left of round 0, and go into round 1 together.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, kMiB, 200 * kMiB), Op(2, 2 * kMiB, 300 * kMiB),
                       Op(3, 301 * kMiB, 400 * kMiB)},
                      6 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2, 3}}));
}

TEST(RoundPacker, ThroughTheDestinationsOfWhatItTakes) {
  // Operation 2 sits next to 0's destination; operation 3 next to 2's.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB, 300 * kMiB),
                       Op(3, 301 * kMiB, 400 * kMiB)},
                      6 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 2, 3}, {1}}));
}

TEST(RoundPacker, NeverPastTheRoundSize) {
  // Operation 2 would be next to 0's destination, but the round has room for two.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, kMiB, 200 * kMiB), Op(2, 101 * kMiB, 300 * kMiB, 2 * kMiB)},
                      4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2}}));
}

TEST(RoundPacker, NeverFromAnotherPass) {
  // Operation 2 runs in the pass after every other operation (its source is itself a
  // destination): taking it into round 0 would run it before operation 1.
  const auto p = Pack({Op(0, 0, 100 * kMiB), Op(1, 10 * kMiB, 200 * kMiB), Op(2, 101 * kMiB, 300 * kMiB, kMiB, 2)},
                      4 * kMiB);
  EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2}}));
}

TEST(RoundPacker, NextToAnyOfSeveralDestinations) {
  OpKey several = Op(0, 0, 0);
  several.dests = 2;
  const auto p = Pack({several, Op(1, 10 * kMiB, 200 * kMiB), Op(2, 201 * kMiB, 300 * kMiB),
                       Op(3, 51 * kMiB, 301 * kMiB)},
                      6 * kMiB, {{0, {50 * kMiB, 100 * kMiB}}});
  // Round 0: operation 0 (3 MiB), then operation 3 next to its destination at 50 MiB
  // (2 MiB); operation 1 no longer fits.
  EXPECT_EQ(p.rounds, (Rounds{{0, 3}, {1, 2}}));
}

TEST(RoundPacker, AnUnknownPlaceIsNextToNothing) {
  // 0 and UINT64_MAX: a place the scan did not know (ranges.h).
  for (uint64_t unknown : {uint64_t(0), UINT64_MAX}) {
    const auto p = Pack({Op(0, 0, unknown), Op(1, 10 * kMiB, 200 * kMiB), Op(2, unknown, 300 * kMiB)}, 4 * kMiB);
    EXPECT_EQ(p.rounds, (Rounds{{0, 1}, {2}})) << unknown;
    EXPECT_EQ(p.alongside, 0u);
  }
}

TEST(RoundPacker, WhateverPlacesAnIndexGivesEveryOperationGoesOutOnce) {
  // Offsets from a crafted index: at the top of the range (an end past UINT64_MAX),
  // overlapping, the same for source and destination. Every operation is handed out
  // exactly once, no round over its size.
  const uint64_t top = UINT64_MAX - 4096;
  std::vector<OpKey> ops = {Op(0, 0, top, kMiB), Op(1, 4096, top - 4096, kMiB), Op(2, 8192, 8192, kMiB),
                            Op(3, top - 100, 12288, kMiB), Op(4, top, top, kMiB), Op(5, UINT64_MAX - 1, 1, kMiB)};
  const auto p = Pack(ops, 4 * kMiB);
  std::vector<uint64_t> all;
  for (const auto& r : p.rounds) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(RoundPacker, RunsFoundTogetherFitTogether) {
  // Operation 0 has two destinations, each followed by a run of four sources (2 MiB
  // read each run); the round has room for operation 0 and one run. The other run is
  // not cut in two (half of it read now, the rest by a later round): it waits for its
  // turn, whole.
  const uint64_t q = kMiB / 4;
  OpKey two = Op(0, 0, 0, 2 * q);
  two.dests = 2;
  std::vector<OpKey> ops = {two, Op(1, kMiB, 300 * kMiB, 2 * q)};
  for (uint64_t i = 0; i < 4; ++i) ops.push_back(Op(2 + i, 100 * kMiB + (2 + i) * q, 1000 * kMiB + i * kMiB, q));
  for (uint64_t i = 0; i < 4; ++i) ops.push_back(Op(6 + i, 200 * kMiB + (2 + i) * q, 2000 * kMiB + i * kMiB, q));
  const auto p = Pack(ops, 4 * kMiB, {{0, {100 * kMiB, 200 * kMiB}}});
  EXPECT_EQ(p.rounds, (Rounds{{0, 2, 3, 4, 5}, {1, 6, 7, 8, 9}}));
}

TEST(RoundPacker, FoundFromTwoDestinationsCountsOnce) {
  // Operation 1's source lies between operation 0's first two destinations: found
  // after the first and before the second, its bytes count once, and the run of five
  // after operation 0's third destination (2.5 MiB, what is left of the round) still
  // fits.
  const uint64_t q = kMiB / 4;
  OpKey three = Op(0, 0, 0, q);
  three.dests = 3;
  std::vector<OpKey> ops = {three, Op(1, 100 * kMiB + q, 500 * kMiB, q), Op(2, 150 * kMiB, 700 * kMiB, 2 * q)};
  for (uint64_t i = 0; i < 5; ++i) ops.push_back(Op(3 + i, 200 * kMiB + (1 + i) * q, 600 * kMiB + i * kMiB, q));
  const auto p = Pack(ops, 4 * kMiB, {{0, {100 * kMiB, 100 * kMiB + 2 * q, 200 * kMiB}}});
  EXPECT_EQ(p.rounds, (Rounds{{0, 1, 3, 4, 5, 6, 7}, {2}}));
}

TEST(RoundPacker, ABatchEndsARound) {
  // A batch holds kBatchBytes, whatever --memory says.
  // The last operation's source lies next to operation 0's destination.
  // Past a batch, it goes into a later round.
  const auto ops_of = [](uint64_t n) {
    const uint64_t k = 4096;
    std::vector<OpKey> ops;
    for (uint64_t i = 0; i < n; ++i) ops.push_back(Op(i, i * k, 5000 * kMiB + 2 * i * k, k));
    ops.push_back(Op(n, 5000 * kMiB + k, 9000 * kMiB, k));
    return ops;
  };
  const uint64_t n = 4 * RoundPacker::kBatchBytes / 256;  // at least 256 bytes held per operation
  const auto p = Pack(ops_of(n), 4096 * kMiB);
  ASSERT_GT(p.rounds.size(), 1u);
  EXPECT_EQ(p.alongside, 0u);
  EXPECT_EQ(p.rounds.back().back(), n);
  // Within one batch, the last operation goes into round 0 (which holds kRoundFiles / 2
  // operations of two files each).
  const auto q = Pack(ops_of(RoundPacker::kRoundFiles / 2 - 1), 4096 * kMiB);
  ASSERT_EQ(q.rounds.size(), 1u);
  EXPECT_EQ(q.alongside, 1u);
}

// Small files: a round holds at most kRoundFiles files, however few bytes they hold (apply
// keeps a round's files open).
TEST(RoundPacker, ARoundHoldsAtMostSoManyFiles) {
  std::vector<OpKey> ops;
  const uint64_t n = 5 * RoundPacker::kRoundFiles / 2;  // 2 files each: 5 rounds' worth
  for (uint64_t i = 0; i < n; ++i) ops.push_back(Op(i, i * kMiB, 90000 * kMiB + i * kMiB, 1024));
  const auto p = Pack(ops, 48 * kMiB);  // 20 MiB of sources and destinations: one round by bytes
  ASSERT_EQ(p.rounds.size(), 5u);
  size_t packed = 0;
  for (const auto& r : p.rounds) {
    EXPECT_LE(2 * r.size(), RoundPacker::kRoundFiles);
    packed += r.size();
  }
  EXPECT_EQ(packed, ops.size());
}

}  // namespace
}  // namespace oans
