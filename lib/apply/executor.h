// Executors carry out a prepared round's operations: ReflinkExecutor (FIDEDUPERANGE,
// lib/apply/reflink.h), HardlinkExecutor (whole files replaced by hardlinks,
// lib/apply/hardlink.h) and DryRunExecutor (describes, changes nothing). Each is called
// by the pipeline stage that finishes rounds, one round at a time and in round order, and
// reports into the round's RoundResult; it never writes the run's statistics itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/apply/stats.h"
#include "lib/apply/verifier.h"

namespace oans {

class Executor {
 public:
  virtual ~Executor() = default;
  // Carries out the operations of `r`. `tick` is called after each operation with the
  // planned bytes it covered.
  virtual void Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) = 0;
  // True for a file that needs no more work although it no longer matches the plan
  // (hardlink mode: a destination already linked by an earlier round).
  virtual bool Handled(const PlanFileRef& f) const {
    (void)f;
    return false;
  }
};

// A destination of an operation that can be used: its index in the round's files.
struct UsableDest {
  uint32_t file = 0;
  uint64_t offset = 0;
};
// Whether `u` is op's source range itself: a rewrite (plan_file.h).
inline bool IsRewrite(const PlanOp& op, const UsableDest& u) { return IsRewrite(op, PlanDest{u.file, u.offset, 0}); }

// The destinations of `op` whose files are open (and, for each one that is not, why,
// counted in `out`); none when the source is not open. `handled` files are passed over.
std::vector<UsableDest> UsableDests(const PreparedRound& r, const PlanOp& op, const Executor& ex, RoundResult* out);

// Describes every operation as one JSON line (round, source, offset, length, dests) and
// changes nothing.
class DryRunExecutor : public Executor {
 public:
  explicit DryRunExecutor(std::function<void(const std::string&)> print) : print_(std::move(print)) {}
  void Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) override;

 private:
  std::function<void(const std::string&)> print_;
};

}  // namespace oans
