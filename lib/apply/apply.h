// Executing a plan: a checked pipeline over its rounds (tbb::parallel_pipeline, two
// rounds in flight at most):
//   prepare (serial, in order): take the plan's next round, skip it
//     if the journal has it, open and check every file (lib/apply/verifier.h), and read
//     its ranges into the page cache in physical order (lib/apply/prefetch.h);
//   finish (serial, in order): run the round's operations through one executor
//     (lib/apply/reflink.h, lib/apply/hardlink.h, or a dry run), close its files, add
//     up its result, and journal it as done unless something in it may succeed on a
//     retry. Only this stage touches the journal, the statistics and the observer.
// With two tokens, prefetch runs at most one round ahead and never evicts the round being
// deduped. A stop request or the deadline ends the pipeline after the round being
// finished; a round prepared but not started is given back unopened next time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/apply/hardlink.h"
#include "lib/apply/journal.h"
#include "lib/apply/stats.h"
#include "lib/apply/verifier.h"
#include "lib/base/observer.h"
#include "lib/base/sys.h"
#include "lib/format/plan_file.h"

namespace oans {

struct ApplyOptions {
  bool dry_run = false;   // verify files and report operations, change nothing
  bool prefetch = true;   // read each round into the page cache before deduping it
  // On SSDs the next round's files are opened while a round is read; on a spinning disk
  // after, so that their metadata reads do not come between the round's data reads.
  // kAuto: the storage the plan records, else its roots' (DetectStorage).
  StorageChoice storage = StorageChoice::kAuto;
  // On a spinning disk (with prefetch), the filesystem is committed (syncfs) before a
  // round is read once this many bytes were deduped since the last commit (apply.cc,
  // Run::CommitIfDue); 0: never.
  uint64_t commit_every = 512ull << 20;
  const std::atomic<bool>* stop = nullptr;  // stop after the current round
  // Stop after the round during which this time passes (0 = no deadline).
  std::chrono::steady_clock::time_point deadline{};
  uint64_t max_rate = 0;      // prefetch read bandwidth limit in bytes/s (0 = none)
  Journal* journal = nullptr; // finished rounds are skipped and recorded here
  // Hardlink mode, for filesystems without reflink (lib/apply/hardlink.h).
  bool hardlink = false;
  LinkPolicy link_policy;
  LinkIntentLog* link_log = nullptr;  // hidden link names, for recovery after a kill
  // The directories above the plan's files, sorted (PlanDirectories, dir_ahead.h): on a
  // spinning disk, with prefetch, they are listed once before the first round, and the
  // vector emptied. Null or empty: none listed.
  std::vector<std::string>* directories = nullptr;
  // Called for each operation in dry-run mode with a one-line description.
  std::function<void(const std::string&)> on_dry_run;
};

Status RunApply(Sys& sys, PlanReader& plan, const ApplyOptions& options, Observer* observer, ApplyStats* stats);

// Refuses, before any work, a plan whose roots (without roots: its filesystems' mount
// points) are on a filesystem that cannot share data as `hardlink` asks: one error line
// naming the fix (CheckCanShareData, lib/base/fsinfo.h). A path that cannot be opened
// now is left to the checks of each file.
Status CheckPlanCanShare(const PlanHeader& header, bool hardlink);

}  // namespace oans
