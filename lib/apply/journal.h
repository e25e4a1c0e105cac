// The apply journal: which rounds of a plan are finished, so that an apply stopped by a
// deadline, a signal or a crash resumes where it stopped. A text file beside the plan
// (PLAN.journal): a first line naming the plan (creation time and round count), then one
// line per finished round, each made durable (fdatasync) before the next round starts.
// A journal that names another plan is set aside, never trusted. Only complete lines
// count: a line must end with its newline and read exactly "done N", so a line cut by a
// crash ("done 12" of "done 123") is ignored.
//
// The journal tells apply what to skip, so it must be the user's own: it is opened
// without following symlinks, must be a regular file owned by the user and writable by
// no one else, in a directory that only root or the user can change (lib/base/trust.h).
// MarkDone may be called from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <vector>
#include <string>

#include "lib/apply/link_intent.h"
#include "lib/format/plan_file.h"
#include "lib/base/status.h"

namespace oans {

class Journal : public LinkIntentLog {
 public:
  ~Journal();
  // Opens or creates the journal at `path` for the plan with `header`. A journal of
  // another plan is renamed to PATH.stale and a new one started (`notice` says so).
  static Result<std::unique_ptr<Journal>> Open(const std::string& path, const PlanHeader& header,
                                               std::string* notice);
  bool Done(uint64_t round) const;
  size_t done_count() const;
  // Records a finished round durably.
  Status MarkDone(uint64_t round);
  const std::string& path() const { return path_; }
  // Hidden hardlink names: recorded durably before one is made (Begin) and after it is
  // gone (End). Pending() lists those a killed run left, read from the journal found at
  // Open, whichever plan it belonged to.
  Status Begin(const LinkIntent& intent) override;
  Status End(const LinkIntent& intent) override;
  Status BeginAll(const std::vector<LinkIntent>& intents) override;  // one write, one sync
  Status EndAll(const std::vector<LinkIntent>& intents) override;
  std::vector<LinkIntent> Pending() const;

 private:
  Journal() = default;
  Status Load(int fd, const std::string& want, uint64_t rounds, bool* matches);
  std::string path_;
  int fd_ = -1;
  Status Append(const std::string& line);
  // One line per intent, `line` making each, in one durable write.
  Status AppendAll(const std::vector<LinkIntent>& intents, std::string (*line)(const LinkIntent&));
  // Reads a "link-begin"/"link-end" line into pending_; false when it is neither.
  bool ParseLinkLine(const std::string& line);
  std::set<uint64_t> done_;
  bool cut_ = false;  // a failed write left a cut record that could not be taken back
  mutable std::mutex mu_;
  std::map<std::string, LinkIntent> pending_;  // by dir + "/" + tmp
};

// The rounds recorded in a journal's text after its header line: complete lines
// ("done N\n" exactly, N < rounds) only. Exposed for tests.
std::set<uint64_t> ParseJournalRounds(const std::string& body, uint64_t rounds);

}  // namespace oans
