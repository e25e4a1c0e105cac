#include "lib/apply/prefetch.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

// Holds every page-cache drop until let go.
class HeldSys : public test::ForwardingSys {
 public:
  void DontNeed(int, uint64_t, uint64_t) override {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return go_; });
  }
  void Go() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      go_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool go_ = false;
};

// A round of one operation whose source file is open.
std::unique_ptr<PreparedRound> OpenRound(const std::string& path) {
  auto r = std::make_unique<PreparedRound>();
  r->round.files.resize(1);
  PlanOp op;
  op.length = 4096;
  r->round.ops.push_back(op);
  auto fd = DefaultSys().OpenNoFollow(path);
  EXPECT_TRUE(fd.ok());
  r->fds.emplace_back(DefaultSys(), fd.ok() ? *fd : -1);
  return r;
}

// Rounds handed over wait to be released with their files open; past kWaiting of them, Add
// waits until one is closed, so a run holds at most so many rounds' files.
TEST(Releaser, HoldsAtMostSoManyRoundsOpen) {
  test::TempDir dir;
  test::WriteFile(dir.Join("f"), std::string(4096, 'x'));
  HeldSys sys;
  std::atomic<int> added{0};
  {
    Releaser releaser(sys);
    std::thread adder([&] {
      for (int i = 0; i < 4; ++i) {
        releaser.Add(OpenRound(dir.Join("f")));
        added++;
      }
    });
    // The first round is being released (held): kWaiting are in, the next one waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(added.load(), int(Releaser::kWaiting));
    sys.Go();
    adder.join();
    EXPECT_EQ(added.load(), 4);
  }
}

}  // namespace
}  // namespace oans
