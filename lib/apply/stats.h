// What an apply did, for its summary (apply_figures.h). Each round's executor fills
// a RoundResult. The stage that finishes rounds adds them up in round order. So only
// that stage writes the run's ApplyStats.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace oans {

struct ApplyStats {
  uint64_t rounds = 0, rounds_done = 0;
  uint64_t rounds_from_journal = 0;  // finished by an earlier run, skipped
  uint64_t rounds_to_retry = 0;      // ran, but something in them may succeed next time
  uint64_t ops = 0;
  uint64_t bytes_planned = 0;
  uint64_t bytes_deduped = 0;
  uint64_t bytes_rewritten = 0;  // copied into new extents so that old ones go free
  uint64_t files_linked = 0, bytes_linked = 0;  // hardlink mode: files linked, bytes their old copies held on disk
  uint64_t bytes_prefetched = 0;
  uint64_t files_checked = 0;
  uint64_t files_changed = 0;  // files skipped: changed since the scan
  // Destinations paired by size alone (unread by the scan) that the compare found
  // different: left as they were, as expected; no error, not skipped.
  uint64_t bytes_differed = 0;
  bool open_ahead = false;  // the next round opened while one was read (SSD)
  uint64_t tree_ahead_bytes = 0;  // extent and free space tree blocks read in disk order first (HDD)
  uint64_t dirs_ahead = 0;  // directories above the plan's files listed first (HDD; dir_ahead.h)
  uint64_t inode_tables_bytes = 0;  // XFS inode tables read in disk order first (HDD; lib/base/inode_sweep.h)
  uint64_t commits = 0;  // commits (syncfs) made between rounds (HDD)
  // Bytes not deduped, by reason ("changed since scan", "differs", "EPERM", ...).
  std::map<std::string, uint64_t> skipped;
  // Bytes a rewrite was planned for and not made, by reason ("shared with a snapshot").
  // Also the bytes then not shared into such a file. The planner's guess did not hold.
  // That is no error: the exit code does not count them.
  std::map<std::string, uint64_t> not_rewritten;
  uint64_t errors = 0;  // destinations that failed (not counting "differs"/changed)
  // Space measured before and after (lib/apply/measure.h); not in a dry run.
  bool space_measured = false;
  bool space_split = false;        // btrfs: data and metadata told apart
  int64_t data_freed = 0;          // data in use before minus after
  int64_t metadata_grown = 0;      // metadata in use after minus before, with copies
  bool space_approximate = false;  // moved more than the apply's operations explain
  int64_t net_freed() const { return data_freed - metadata_grown; }
  bool interrupted = false;
  bool deadline_reached = false;
  bool dry_run = false;  // set by the tool, for its summary
  double seconds = 0;   // the tool's wall time, set by it for its summary
  uint64_t bytes_skipped() const {
    uint64_t n = 0;
    for (auto& [k, v] : skipped) n += v;
    return n;
  }
};

// A problem with one file: its path and what happened.
// The words are the same for every file it happens to.
struct FileProblem {
  std::string path, reason;
  friend bool operator==(const FileProblem&, const FileProblem&) = default;
};

// The outcome of one round.
struct RoundResult {
  uint64_t ops = 0;
  uint64_t bytes_deduped = 0;
  uint64_t bytes_rewritten = 0;
  uint64_t files_linked = 0, bytes_linked = 0;
  uint64_t bytes_differed = 0;  // paired by size alone, found different
  uint64_t errors = 0;
  uint64_t bytes_done = 0;  // planned bytes handled, for progress
  std::map<std::string, uint64_t> skipped;
  std::map<std::string, uint64_t> not_rewritten;
  std::vector<FileProblem> notices;  // per-file problems for the user
  // Something in the round failed in a way that may not happen again.
  // Busy, no space, an I/O error, a file open for writing: not journaled as done.
  bool retry = false;

  void Skip(const std::string& reason, uint64_t bytes, bool transient) {
    skipped[reason] += bytes;
    retry |= transient;
  }
  void AddTo(ApplyStats* s) const {
    s->ops += ops;
    s->bytes_deduped += bytes_deduped;
    s->bytes_rewritten += bytes_rewritten;
    s->files_linked += files_linked;
    s->bytes_linked += bytes_linked;
    s->bytes_differed += bytes_differed;
    s->errors += errors;
    for (const auto& [k, v] : skipped) s->skipped[k] += v;
    for (const auto& [k, v] : not_rewritten) s->not_rewritten[k] += v;
  }
  // A notice, unless the round has given the same one already.
  void Notice(std::string path, std::string reason) {
    FileProblem p{std::move(path), std::move(reason)};
    if (std::find(notices.begin(), notices.end(), p) == notices.end()) notices.push_back(std::move(p));
  }
};

}  // namespace oans
