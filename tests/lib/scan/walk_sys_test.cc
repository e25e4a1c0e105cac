// The walk reads directories through Sys only: a fault injected in Sys::ReadDir is what
// the walk sees, and every directory it opened is closed through Sys.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>

#include "lib/scan/walk.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

class ReadDirFaultSys : public test::ForwardingSys {
 public:
  // After the first batch of directory `fail_fd_of`'s entries, ReadDir fails with EIO.
  std::string fail_name;
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    auto fd = ForwardingSys::OpenAt(dirfd, name, directory);
    std::lock_guard<std::mutex> lk(mu_);
    if (fd.ok() && directory) {
      open_dirs_.insert(*fd);
      if (name == fail_name) failing_ = *fd;
    }
    return fd;
  }
  void Close(int fd) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      open_dirs_.erase(fd);
      if (fd == failing_) failing_ = -2;  // the number may be another directory's next
    }
    ForwardingSys::Close(fd);
  }
  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override {
    reads_++;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (fd == failing_) {
        batch->clear();
        return Status::Io("reading directory", EIO);
      }
    }
    return ForwardingSys::ReadDir(fd, batch);
  }
  size_t open_dirs() {
    std::lock_guard<std::mutex> lk(mu_);
    return open_dirs_.size();
  }
  std::atomic<int> reads_{0};

 private:
  std::mutex mu_;
  std::set<int> open_dirs_;
  int failing_ = -2;
};

TEST(WalkSysTest, DirectoryReadsGoThroughSys) {
  test::TempDir dir;
  test::MakeDir(dir.Join("good"));
  test::MakeDir(dir.Join("bad"));
  test::WriteFile(dir.Join("good/f"), "good data");
  test::WriteFile(dir.Join("bad/g"), "hidden by the fault");
  ReadDirFaultSys sys;
  sys.fail_name = "bad";
  auto r = Walk(sys, {dir.path()}, WalkOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(sys.reads_.load(), 3);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].path, dir.Join("bad"));
  EXPECT_EQ(r->problems[0].status.errnum(), EIO);
  std::set<std::string> paths;
  for (const auto& f : r->files) paths.insert(f.path);
  EXPECT_TRUE(paths.count(dir.Join("good/f")));
  EXPECT_FALSE(paths.count(dir.Join("bad/g")));
  EXPECT_EQ(sys.open_dirs(), 0u) << "a directory was not closed through Sys";
}

}  // namespace
}  // namespace oans
