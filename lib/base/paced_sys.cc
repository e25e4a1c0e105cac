#include "lib/base/paced_sys.h"

#include <algorithm>
#include <thread>

namespace oans {

namespace {

class SteadyClock final : public PaceClock {
 public:
  Time Now() override { return std::chrono::steady_clock::now(); }
  void SleepUntil(Time t) override { std::this_thread::sleep_until(t); }
};

}  // namespace

PaceClock& SteadyPaceClock() {
  static SteadyClock clock;
  return clock;
}

PacedSys::PacedSys(Sys& inner, uint64_t bytes_per_s, PaceClock& clock)
    : inner_(inner), rate_(bytes_per_s), clock_(clock), start_(clock.Now()) {}

void PacedSys::Account(uint64_t bytes) {
  if (!paced() || bytes == 0) return;
  PaceClock::Time due;
  {
    std::lock_guard<std::mutex> lk(mu_);
    total_ += bytes;
    due = start_ + std::chrono::duration_cast<PaceClock::Time::duration>(
                       std::chrono::duration<double>(double(total_) / double(rate_)));
  }
  clock_.SleepUntil(due);
}

Result<size_t> PacedSys::Pread(int fd, void* buf, size_t len, uint64_t offset) {
  Result<size_t> n = inner_.Pread(fd, buf, len, offset);
  if (n.ok()) Account(*n);
  return n;
}

Result<size_t> PacedSys::Populate(int fd, uint64_t offset, size_t length, std::vector<char>* buffer) {
  if (paced()) length = std::min(length, buffer->size());
  Result<size_t> n = inner_.Populate(fd, offset, length, buffer);
  if (n.ok()) Account(*n);
  return n;
}

Status PacedSys::Pwrite(int fd, const void* buf, size_t len, uint64_t offset) {
  Status s = inner_.Pwrite(fd, buf, len, offset);
  if (s.ok()) Account(len);
  return s;
}

}  // namespace oans
