// PacedSys: every call forwarded; reads and writes paced under a byte rate.
#include "lib/base/paced_sys.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

// A clock that stands still and records every wait asked of it.
class FakeClock : public PaceClock {
 public:
  Time Now() override { return start; }
  void SleepUntil(Time t) override {
    std::lock_guard<std::mutex> lk(mu);
    waits.push_back(duration_cast<microseconds>(t - start).count());
  }
  const Time start = std::chrono::steady_clock::now();
  std::mutex mu;
  std::vector<int64_t> waits;  // microseconds after start
};

// Answers every read and write in full, and counts the hints.
class DataSys : public test::ForwardingSys {
 public:
  Result<size_t> Pread(int, void*, size_t len, uint64_t) override { return len; }
  Result<size_t> Populate(int, uint64_t, size_t length, std::vector<char>*) override { return length; }
  Status Pwrite(int, const void*, size_t, uint64_t) override { return Status::Ok(); }
  void WillNeed(int, uint64_t, uint64_t) override { will_need++; }
  Status Syncfs(int) override {
    syncs++;
    return Status::Ok();
  }
  std::atomic<int> will_need{0}, syncs{0};
};

// Each byte moved at 1000 bytes/s puts the next wait 1 ms further from the start.
TEST(PacedSys, WaitsUntilTheAverageIsBackUnderTheRate) {
  DataSys inner;
  FakeClock clock;
  PacedSys sys(inner, 1000, clock);
  char buf[500];
  ASSERT_EQ(*sys.Pread(3, buf, 500, 0), 500u);
  ASSERT_EQ(*sys.Pread(3, buf, 250, 0), 250u);
  ASSERT_TRUE(sys.Pwrite(3, buf, 250, 0).ok());  // a copy's writes count as well
  EXPECT_EQ(clock.waits, (std::vector<int64_t>{500000, 750000, 1000000}));
}

// Paced, Populate reads a buffer a call, so the pace is kept in steps of a buffer, and
// the read-ahead hint is dropped; unpaced, both go through as asked.
TEST(PacedSys, PopulatesABufferACallAndDropsHintsWhenPaced) {
  DataSys inner;
  FakeClock clock;
  std::vector<char> buffer(100);
  PacedSys paced(inner, 1000, clock);
  paced.WillNeed(3, 0, 1000);
  EXPECT_EQ(*paced.Populate(3, 0, 1000, &buffer), 100u);
  EXPECT_EQ(inner.will_need.load(), 0);
  EXPECT_EQ(clock.waits, (std::vector<int64_t>{100000}));

  PacedSys free(inner, 0, clock);
  free.WillNeed(3, 0, 1000);
  EXPECT_EQ(*free.Populate(3, 0, 1000, &buffer), 1000u);
  EXPECT_EQ(inner.will_need.load(), 1);
  EXPECT_EQ(clock.waits.size(), 1u) << "rate 0 never waits";
  EXPECT_FALSE(free.paced());
  EXPECT_TRUE(paced.paced());
}

// Calls that move no data go to the inner Sys unpaced.
TEST(PacedSys, ForwardsWhatItDoesNotPace) {
  DataSys inner;
  FakeClock clock;
  PacedSys sys(inner, 1000, clock);
  EXPECT_TRUE(sys.Syncfs(3).ok());
  EXPECT_EQ(inner.syncs.load(), 1);
  EXPECT_EQ(&sys.inner(), &inner);
  test::TempDir dir;
  auto fd = sys.OpenDirNoFollow(dir.path());
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_TRUE(sys.Fstat(*fd).ok());
  sys.Close(*fd);
  EXPECT_TRUE(clock.waits.empty());
}

// Threads reading at once share one rate: the last wait is the total over the rate.
TEST(PacedSys, ThreadsShareOneRate) {
  DataSys inner;
  FakeClock clock;
  PacedSys sys(inner, 1000, clock);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      char buf[10];
      for (int i = 0; i < 100; ++i) (void)sys.Pread(3, buf, 10, 0);
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(clock.waits.size(), 400u);
  int64_t last = 0;
  for (int64_t w : clock.waits) last = std::max(last, w);
  EXPECT_EQ(last, 4000000);  // 4000 bytes at 1000 bytes/s
}

// The real clock: 32 KiB at 256 KiB/s cannot take less than 125 ms.
TEST(PacedSys, TheRealClockWaits) {
  DataSys inner;
  PacedSys sys(inner, 256 << 10);
  std::vector<char> buf(4096);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(*sys.Pread(3, buf.data(), buf.size(), 0), buf.size());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(125));
}

}  // namespace
}  // namespace oans
