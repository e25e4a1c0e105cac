// The apply journal: which rounds of a plan are finished, so that an apply stopped by a
// deadline, a signal or a crash resumes where it stopped. A text file beside the plan
// (PLAN.journal): a first line naming the plan (creation time and round count), then one
// line per finished round, each made durable (fdatasync) before the next round starts.
// A journal that names another plan is set aside, never trusted.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "lib/format/plan_file.h"
#include "lib/base/status.h"

namespace oans {

class Journal {
 public:
  ~Journal();
  // Opens or creates the journal at `path` for the plan with `header`. A journal of
  // another plan is renamed to PATH.stale and a new one started (`notice` says so).
  static Result<std::unique_ptr<Journal>> Open(const std::string& path, const PlanHeader& header,
                                               std::string* notice);
  bool Done(uint64_t round) const { return done_.count(round) != 0; }
  size_t done_count() const { return done_.size(); }
  // Records a finished round durably.
  Status MarkDone(uint64_t round);
  const std::string& path() const { return path_; }

 private:
  Journal() = default;
  std::string path_;
  int fd_ = -1;
  std::set<uint64_t> done_;
};

}  // namespace oans
