// `oans run`: one generation of the nightly job in a state directory (lib/run/state_dir.h).
//   1. open the state directory (created 0700 when roots are given) and take its lock;
//   2. with roots: store them and the options (run.conf); without: replay the stored ones;
//   3. refuse a state directory on a root's filesystem;
//   4. oans-scan --previous <newest index> -o gen-N.idx ROOT...
//   5. oans-plan -o plan-N.capnp gen-N.idx
//   6. oans-apply plan-N.capnp (not with plan_only: `oans apply PLAN` later)
//   7. remove generations older than the `keep` newest complete ones.
// With apply_newest, steps 4 to 7 are only: oans-apply <the newest plan>.
// The tools run as child processes (lib/run/spawn.h), so each keeps its own progress,
// signal handling and summary; their exit codes combine into the run's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/run/run_config.h"

namespace oans {

struct RunRequest {
  // Roots given on the command line (empty: replay the stored roots and options).
  std::vector<std::string> roots;
  RunConfig config;            // used with roots (its roots are replaced by the canonical ones)
  std::string state_dir;       // "" = state_base + "/" + StateDirName(roots)
  std::string state_base = "/var/lib/oans";
  std::string tool_dir;        // where oans-scan, oans-plan and oans-apply are
  std::vector<std::string> per_run_args;  // given to every tool, never stored (--quiet, --progress=...)
  // `oans apply` without a plan: no scan and no plan; apply the newest generation's plan
  // of the stored state directory, under its lock, with the stored apply options and then
  // these (which win), never stored.
  bool apply_newest = false;
  std::vector<std::string> extra_apply_args;
};

struct RunOutcome {
  int exit_code = 2;           // 0 done, 1 done with files skipped, 2 failed, 3 stopped
  std::string state_dir;
  uint64_t generation = 0;
  std::string plan;            // the plan's path once written
  bool applied = false;
  std::vector<uint64_t> removed;  // generations removed
  std::string message;         // what failed, or what to do next
};

// Runs one generation; the outcome says what happened (also on failure).
RunOutcome RunGeneration(const RunRequest& request);

// The state directory a request uses: the given one, the one derived from the roots, or,
// without roots, the only one under state_base that has stored roots.
Result<std::string> ChooseStateDir(const RunRequest& request, const std::vector<std::string>& canonical_roots);

}  // namespace oans
