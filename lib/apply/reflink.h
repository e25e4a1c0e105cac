// The reflink executor: FIDEDUPERANGE for each operation of a round, up to 127
// destinations a call. The kernel compares the bytes under lock and shares only what is
// identical; a destination that stopped short goes on alone from where it stopped, and a
// call that makes no progress ends that destination. Failures are counted by reason; a
// transient one (busy, no space, I/O error) leaves the round to be tried again.
#pragma once

#include "lib/apply/executor.h"
#include "lib/base/sys.h"

namespace oans {

class ReflinkExecutor : public Executor {
 public:
  explicit ReflinkExecutor(Sys& sys) : sys_(sys) {}
  void Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) override;

 private:
  // Finishes one destination of a call whose first answer was `d`.
  void Finish(const PreparedRound& r, const PlanOp& op, const UsableDest& dest, DedupeDest d, RoundResult* out);
  Sys& sys_;
};

}  // namespace oans
