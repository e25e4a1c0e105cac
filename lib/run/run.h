// `oans run`: one generation of the nightly job in a state directory (lib/run/state_dir.h).
//   1. open the state directory (created 0700 when roots are given) and take its lock;
//   2. with roots: the options given; without: the stored ones, then those given;
//   3. refuse a state directory on a root's filesystem, and roots on a filesystem that
//      cannot share data as the apply options ask (lib/base/fsinfo.h); with roots, then
//      store them and the options (run.conf);
//   4. oans-scan --previous <newest index> -o gen-N.idx ROOT...
//   5. oans-plan -o plan-N.capnp gen-N.idx
//   6. oans-apply plan-N.capnp (not with plan_only: `oans apply PLAN` later)
//   7. remove generations older than the `keep` newest complete ones.
// Steps 4 to 7 are recorded in run-N.json as they go (lib/run/record.h), each tool's
// summary taken from its --summary-file. With apply_newest, steps 4 to 7 are only:
// oans-apply <the newest plan>, unrecorded.
// The tools run as child processes (lib/run/spawn.h), so each keeps its own progress,
// signal handling and summary; their exit codes combine into the run's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/json.h"
#include "lib/run/run_config.h"

namespace oans {

struct RunRequest {
  // Roots given on the command line (empty: replay the stored roots and options).
  std::vector<std::string> roots;
  // The options given. With roots they are stored (all of them: what is not given is no
  // longer stored) and used; without, they apply to this run only, after the stored ones:
  // each tool takes an option's last value, so they override it, and lists (--exclude)
  // add to the stored ones; keep replaces the stored one when keep_given.
  RunConfig config;
  bool keep_given = false;
  std::string state_dir;       // "" = state_base + "/" + StateDirName(roots)
  std::string state_base = "/var/lib/oans";
  std::string tool_dir;        // where oans-scan, oans-plan and oans-apply are
  // Per run, never stored: given to every tool (--quiet, --progress=...), and to oans-apply
  // after everything else (--until, --deadline; or oans apply's own arguments).
  std::vector<std::string> per_run_args;
  std::vector<std::string> extra_apply_args;
  bool plan_only = false;      // scan and plan only; the plan is applied later
  // How long to wait for another run holding the lock (0: refuse at once, exit 4).
  uint64_t wait_lock_seconds = 0;
  // `oans apply` without a plan: no scan and no plan; apply the newest generation's plan
  // of the stored state directory, under its lock, with the stored apply options and then
  // extra_apply_args.
  bool apply_newest = false;
  // Told what the run notices before it starts its tools (stored options it ignores).
  std::function<void(const std::string&)> note;
};

struct RunOutcome {
  // 0 done, 1 done with files skipped, 2 failed, 3 stopped, 4 another run holds the lock
  int exit_code = 2;
  std::string state_dir;
  uint64_t generation = 0;
  std::string plan;            // the plan's path once written
  bool applied = false;
  std::vector<uint64_t> removed;  // generations removed
  std::string message;         // what failed, or what to do next
  Json record;                 // the run's record (lib/run/record.h); null when it has none
};

// Runs one generation; the outcome says what happened (also on failure).
RunOutcome RunGeneration(const RunRequest& request);

// What is stored for the request's state directory (chosen as RunGeneration would, never
// created), for people: FormatRunConfig. Takes no lock: run.conf is replaced by rename.
Result<std::string> ShowRunConfig(const RunRequest& request);

// The state directory a request uses: the given one, the one derived from the roots, or,
// without roots, the only one under state_base that has stored roots.
Result<std::string> ChooseStateDir(const RunRequest& request, const std::vector<std::string>& canonical_roots);

}  // namespace oans
