// The reflink executor: FIDEDUPERANGE for each operation of a round, up to 127
// destinations a call. The kernel compares the bytes under lock and shares only what is
// identical; a destination that stopped short goes on alone from where it stopped, and a
// call that makes no progress ends that destination. Failures are counted by reason; a
// transient one (busy, no space, I/O error) leaves the round to be tried again.
// An operation that names its source range as a destination rewrites it (plan format 2):
// the range is copied into an unnamed new file (O_TMPFILE, mode 0600, in the file's own
// directory, on its filesystem), and that copy is the source of the call, for the range
// itself and every other destination. The kernel compares the copy with the file under
// lock, so a file changed after the copy was read differs and keeps its data; once
// shared, the copy's new extent is the file's, and the copy is closed and gone.
#pragma once

#include <set>
#include <utility>
#include <vector>

#include "lib/apply/executor.h"
#include "lib/apply/prefetch.h"
#include "lib/base/fd.h"
#include "lib/base/sys.h"

namespace oans {

class ReflinkExecutor : public Executor {
 public:
  // Under --max-rate, `sys` is a PacedSys: a rewrite's copy is paced with the reads.
  explicit ReflinkExecutor(Sys& sys) : sys_(sys) {}
  void Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) override;

 private:
  // Finishes one destination of a call from `src` whose first answer was `d`.
  void Finish(const PreparedRound& r, const PlanOp& op, int src, const UsableDest& dest, DedupeDest d,
              RoundResult* out);
  // An unnamed new file holding op's source range at the same offsets, open; or why not.
  Result<Fd> CopyToNewExtent(const PreparedRound& r, const PlanOp& op);
  bool StartRewrite(const PreparedRound& r, const PlanOp& op, std::vector<UsableDest>* usable, Fd* copy,
                    RoundResult* out);
  Sys& sys_;
  std::vector<char> buffer_;
  // (filesystem, inode) of the files a rewrite was not made in: nothing more is shared
  // into them this run (the runs that needed the rewrite would free nothing).
  std::set<std::pair<uint32_t, uint64_t>> unrewritten_;
};

}  // namespace oans
