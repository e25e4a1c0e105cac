#include "lib/apply/round_source.h"

#include <numeric>
#include <utility>

namespace oans {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  uint64_t state = seed;
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[size_t(SplitMix64(&state) % i)]);
  return order;
}

Status RoundSource::Start() {
  if (!shuffled_) return Status::Ok();
  for (;;) {
    PlanRound r;
    OANS_ASSIGN_OR_RETURN(auto more, plan_.Next(&r));
    if (!more) break;
    if (journal_ && journal_->Done(r.index)) {
      // Skipped in any case: keep its index only.
      r.files = {};
      r.ops = {};
    }
    all_.push_back(std::move(r));
  }
  permutation_ = ShuffledOrder(all_.size(), seed_);
  return Status::Ok();
}

Result<bool> RoundSource::Next(PlanRound* r) {
  if (!shuffled_) return plan_.Next(r);
  if (next_ == permutation_.size()) return false;
  *r = std::move(all_[permutation_[next_++]]);
  return true;
}

}  // namespace oans
