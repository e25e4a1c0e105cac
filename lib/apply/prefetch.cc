#include "lib/apply/prefetch.h"

#include <algorithm>
#include <thread>

namespace oans {

void RateLimiter::Account(uint64_t bytes) {
  if (!rate_) return;
  std::chrono::steady_clock::time_point due;
  {
    std::lock_guard<std::mutex> lk(mu_);
    total_ += bytes;
    due = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(double(total_) / double(rate_)));
  }
  std::this_thread::sleep_until(due);
}

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
    if (p.fds[op.source] < 0) continue;
    ranges.push_back({op.physical, p.fds[op.source], op.offset, op.length});
    for (const auto& d : op.dests)
      if (p.fds[d.file] >= 0) ranges.push_back({d.physical, p.fds[d.file], d.offset, op.length});
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
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(r));
  }
  cv_.notify_one();
}

void Releaser::Loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return done_ || !queue_.empty(); });
    if (queue_.empty()) return;  // done, nothing left
    std::unique_ptr<PreparedRound> r = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    Release(sys_, *r);
    Verifier::CloseAll(sys_, r.get());
    lk.lock();
  }
}

void Prefetch(Sys& sys, RateLimiter* rate, std::vector<char>* buffer, uint64_t* head, PreparedRound* p) {
  std::vector<R> ranges = Ranges(*p);
  std::sort(ranges.begin(), ranges.end(), [](const R& a, const R& b) { return a.physical < b.physical; });
  // From where the previous round's reads left the head, up, then the rest from the
  // bottom: a round whose sources and destinations lie in two parts of the disk costs
  // one long seek (the wrap) instead of two.
  auto from = std::lower_bound(ranges.begin(), ranges.end(), *head,
                               [](const R& r, uint64_t at) { return r.physical < at; });
  std::rotate(ranges.begin(), from, ranges.end());
  // Not with --max-rate, whose pace the plain reads below set.
  if (!rate->limited())
    for (const auto& r : ranges) sys.WillNeed(r.fd, r.offset, r.length);
  for (const auto& r : ranges) {
    for (uint64_t off = 0; off < r.length;) {
      // Where --max-rate paces the reads, a buffer at a time.
      const uint64_t most = rate->limited() ? buffer->size() : r.length - off;
      auto n = sys.Populate(r.fd, r.offset + off, size_t(std::min<uint64_t>(most, r.length - off)), buffer);
      if (!n.ok() || *n == 0) break;  // the dedupe call will see the problem itself
      off += *n;
      p->prefetched += *n;
      rate->Account(*n);
    }
  }
  if (!ranges.empty()) *head = ranges.back().physical + ranges.back().length;
}

}  // namespace oans
