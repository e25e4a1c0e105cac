// Executing a plan. Two threads form a pipeline over the rounds:
//   prefetch thread: read round N+1 from the plan, open every file without following
//     symlinks, check the open descriptor against the plan (dev, inode, size, mtime,
//     filesystem, inside the plan's roots), then read the round's ranges sequentially in
//     physical order so the kernel's compare finds them in the page cache;
//   dedupe thread (the caller): FIDEDUPERANGE for each operation of round N.
// The queue between them holds one round, so prefetch runs at most one round ahead and
// never evicts the round being deduped. Data is read into one fixed 1 MiB buffer.
// Per-destination problems are counted by reason and the run goes on.
// ApplyOrder::kShuffled gives up the disk order on purpose, so that what the order is
// worth can be measured; the journal names rounds by index, so any order resumes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/apply/journal.h"
#include "lib/base/observer.h"
#include "lib/format/plan_file.h"
#include "lib/base/sys.h"

namespace oans {

// The order of the rounds and of each round's read-ahead.
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

struct ApplyOptions {
  bool dry_run = false;   // verify files and report operations, change nothing
  bool prefetch = true;   // read each round into the page cache before deduping it
  ApplyOrder order = ApplyOrder::kPhysical;
  uint64_t order_seed = kDefaultOrderSeed;  // for ApplyOrder::kShuffled
  const std::atomic<bool>* stop = nullptr;  // stop after the current round
  // Stop after the round during which this time passes (0 = no deadline).
  std::chrono::steady_clock::time_point deadline{};
  uint64_t max_rate = 0;      // prefetch read bandwidth limit in bytes/s (0 = none)
  Journal* journal = nullptr; // finished rounds are skipped and recorded here
  // Hardlink mode, for filesystems without reflink: each whole-file destination is
  // compared byte for byte with its source and then replaced by a hardlink to it
  // (temporary name, link, rename). Linked files change together from then on.
  bool hardlink = false;
  // Called for each operation in dry-run mode with a one-line description.
  std::function<void(const std::string&)> on_dry_run;
};

struct ApplyStats {
  uint64_t rounds = 0, rounds_done = 0;
  uint64_t rounds_from_journal = 0;  // finished by an earlier run, skipped
  uint64_t ops = 0;
  uint64_t bytes_planned = 0;
  uint64_t bytes_deduped = 0;
  uint64_t files_linked = 0, bytes_linked = 0;  // hardlink mode
  uint64_t bytes_prefetched = 0;
  uint64_t files_checked = 0;
  uint64_t files_mismatch = 0;
  // Bytes not deduped, by reason ("changed since scan", "differs", "EPERM", ...).
  std::map<std::string, uint64_t> skipped;
  uint64_t errors = 0;  // destinations that failed (not counting "differs"/changed)
  bool interrupted = false;
  bool deadline_reached = false;
  uint64_t bytes_skipped() const {
    uint64_t n = 0;
    for (auto& [k, v] : skipped) n += v;
    return n;
  }
};

// Checks that the plan's filesystems are the ones mounted at its roots.
Status CheckPlanFilesystems(Sys& sys, const PlanHeader& header);

Status RunApply(Sys& sys, PlanReader& plan, const ApplyOptions& options, Observer* observer, ApplyStats* stats);

// The permutation of 0..n-1 that ApplyOrder::kShuffled uses for `seed`.
std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed);

}  // namespace oans
