// How long-running library work reports to the tools: progress snapshots and notices.
// The library never prints; tools/common renders these for a terminal, as JSON lines,
// or not at all. Calls come from one thread at a time.
#pragma once

#include <cstdint>
#include <string>

namespace oans {

struct ProgressSnapshot {
  const char* phase = "";     // "walk", "hash", "dedupe"
  uint64_t done_bytes = 0, total_bytes = 0;
  uint64_t done_items = 0, total_items = 0;
  // The totals are a guess made before the work was counted (the walk's, from the
  // previous index or the filesystems' used space): shown with "~", never as 100%.
  bool estimate = false;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void Progress(const ProgressSnapshot&) {}
  // A one-line notice for the user: detected storage, warnings, per-file problems.
  virtual void Notice(const std::string&) {}
  // A problem with one file. `reason` says what happened in the same words for every
  // file it happens to, so that a renderer can count files by reason instead of
  // printing the same line for each.
  virtual void FileNotice(const std::string& path, const std::string& reason) { Notice(path + ": " + reason); }
};

}  // namespace oans
