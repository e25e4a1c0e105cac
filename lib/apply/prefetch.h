// Prefetch: reads a prepared round's ranges (sources and destinations) into the page
// cache before it is deduped, so the kernel's compare finds them there.
// The ranges go by offset, from where the previous round left the head, wrapping once.
// Every range is first requested at once (POSIX_FADV_WILLNEED, in that order).
// The device thus has many reads in flight.
// Then they are read in the same order into the page cache (Sys::Populate).
// Once the round is deduped, Release drops what the prefetch read from the page cache
// again: a finished round's sources would otherwise stay (the kernel's compare made them
// recently used, and btrfs drops only the destinations' pages), and under a memory limit
// they push the next rounds' prefetched pages out before those are compared, so the
// compare reads them again, page by page, alternating between source and destination:
// traced on a 512 MiB cap, that was a third of apply's disk requests and most of its seeks.
// Under --max-rate, `sys` is a PacedSys (lib/base/paced_sys.h): it paces the reads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/apply/verifier.h"
#include "lib/base/sys.h"

namespace oans {

// Reads every range of `r` once through `buffer`; adds the bytes to r->prefetched.
// The ranges are read by offset from `*head` up, then from the lowest.
// `*head` is where the previous round's reads ended (0 at first).
// It is then left where this round's reads end. Read errors are left for the dedupe call to meet and report.
void Prefetch(Sys& sys, std::vector<char>* buffer, uint64_t* head, PreparedRound* r);

// After `r` is deduped (its files still open): drops every range Prefetch read, sources
// and destinations, from the page cache (POSIX_FADV_DONTNEED; dirty pages are kept).
void Release(Sys& sys, const PreparedRound& r);

// Releases deduped rounds and closes their files on a thread of its own, as soon as each
// is handed over, so that freeing a round's pages (as long as reading a third of them)
// overlaps the next round's dedupe instead of delaying it. Rounds are released in the
// order given; the destructor releases what is left and joins the thread. Add waits while
// kWaiting rounds are not yet closed: their files stay open until then, and a process may
// hold only so many (a round holds at most RoundPacker::kRoundFiles).
class Releaser {
 public:
  explicit Releaser(Sys& sys);
  ~Releaser();
  Releaser(const Releaser&) = delete;
  Releaser& operator=(const Releaser&) = delete;
  void Add(std::unique_ptr<PreparedRound> r);
  static constexpr size_t kWaiting = 1;

 private:
  void Loop();
  Sys& sys_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable room_;  // Add waits on it for fewer than kWaiting rounds
  std::deque<std::unique_ptr<PreparedRound>> queue_;
  bool done_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace oans
