#include "lib/apply/prefetch.h"

#include <algorithm>
#include <thread>

namespace oans {

namespace {

struct R {
  uint64_t physical;
  int fd;
  uint64_t offset, length;
};

// Every range of the round whose file is open: each operation's source, then its
// destinations, in the plan's order.
std::vector<R> Ranges(const PreparedRound& p) {
  std::vector<R> ranges;
  for (const auto& op : p.round.ops) {
    if (p.fd(op.source) < 0) continue;
    ranges.push_back({op.physical, p.fd(op.source), op.offset, op.length});
    for (const auto& d : op.dests)
      if (p.fd(d.file) >= 0) ranges.push_back({d.physical, p.fd(d.file), d.offset, op.length});
  }
  return ranges;
}

}  // namespace

void Release(Sys& sys, const PreparedRound& p) {
  for (const auto& r : Ranges(p)) sys.DontNeed(r.fd, r.offset, r.length);
}

Releaser::Releaser(Sys& sys) : sys_(sys), thread_([this] { Loop(); }) {}

Releaser::~Releaser() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    done_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Releaser::Add(std::unique_ptr<PreparedRound> r) {
  {
    std::unique_lock<std::mutex> lk(mu_);
    room_.wait(lk, [this] { return queue_.size() < kWaiting; });
    queue_.push_back(std::move(r));
  }
  cv_.notify_one();
}

void Releaser::Loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return done_ || !queue_.empty(); });
    if (queue_.empty()) return;  // done, nothing left
    PreparedRound* r = queue_.front().get();
    lk.unlock();
    Release(sys_, *r);
    Verifier::CloseAll(r);
    lk.lock();
    queue_.pop_front();  // counted until closed: see kWaiting
    room_.notify_one();
  }
}

void Prefetch(Sys& sys, std::vector<char>* buffer, uint64_t* head, PreparedRound* p) {
  std::vector<R> ranges = Ranges(*p);
  std::sort(ranges.begin(), ranges.end(), [](const R& a, const R& b) { return a.physical < b.physical; });
  // From where the previous round's reads left the head, up, then the rest from the
  // bottom: a round whose sources and destinations lie in two parts of the disk costs
  // one long seek (the wrap) instead of two.
  auto from = std::lower_bound(ranges.begin(), ranges.end(), *head,
                               [](const R& r, uint64_t at) { return r.physical < at; });
  std::rotate(ranges.begin(), from, ranges.end());
  // A PacedSys ignores these hints: its reads below set the pace.
  for (const auto& r : ranges) sys.WillNeed(r.fd, r.offset, r.length);
  for (const auto& r : ranges) {
    for (uint64_t off = 0; off < r.length;) {
      auto n = sys.Populate(r.fd, r.offset + off, size_t(r.length - off), buffer);
      if (!n.ok() || *n == 0) break;  // the dedupe call will see the problem itself
      off += *n;
      p->prefetched += *n;
    }
  }
  if (!ranges.empty()) *head = ranges.back().physical + ranges.back().length;
}

}  // namespace oans
