// Where apply's rounds come from, in the order they run: the plan as it is read
// (ApplyOrder::kPhysical), or the whole plan read first and handed out in a fixed
// pseudo-random permutation (kShuffled, to measure what disk order is worth). Either way
// every round is handed out once, named by its index, which is what the journal records.
// Used by the pipeline stage that prepares rounds (one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/apply/journal.h"
#include "lib/format/plan_file.h"

namespace oans {

enum class ApplyOrder {
  // The plan's order: rounds sweep the sources' physical offsets upward, and each round's
  // ranges (sources and destinations) are read ahead by physical offset.
  kPhysical,
  // No disk order: the rounds run in a pseudo-random permutation of the plan's order and
  // each round's ranges are read ahead in a pseudo-random permutation too. Both come from
  // ApplyOptions::order_seed (SplitMix64 + Fisher-Yates, the same on every platform), the
  // ranges' from the seed and the round's index, so every run of a plan, and a run that
  // resumes from the journal, uses the same order. The whole plan is read into memory
  // before the first round (rounds already in the journal are kept as their index only).
  kShuffled,
};
inline constexpr uint64_t kDefaultOrderSeed = 1;

class RoundSource {
 public:
  // `journal` (may be null) marks rounds finished earlier: in shuffled order only their
  // index is kept.
  RoundSource(PlanReader& plan, ApplyOrder order, uint64_t seed, const Journal* journal)
      : plan_(plan), shuffled_(order == ApplyOrder::kShuffled), seed_(seed), journal_(journal) {}
  // Reads the whole plan when the order needs it; call once before Next.
  Status Start();
  // The next round; false when there are no more.
  Result<bool> Next(PlanRound* r);

 private:
  PlanReader& plan_;
  const bool shuffled_;
  const uint64_t seed_;
  const Journal* journal_;
  std::vector<PlanRound> all_;
  std::vector<size_t> permutation_;
  size_t next_ = 0;
};

// The permutation of 0..n-1 that ApplyOrder::kShuffled uses for `seed`.
std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed);

}  // namespace oans
