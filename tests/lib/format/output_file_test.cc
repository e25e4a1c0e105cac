// OutputFile's rules for where it writes: never through a symlink, in place only into a
// character device or FIFO named directly, and no temporary file left behind by a kill.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "lib/format/frame_stream.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

TEST(OutputFile, SymlinkToAFileIsRefusedAndTheFileKept) {
  TempDir dir;
  const std::string victim = dir.Join("victim");
  test::WriteFile(victim, "precious");
  ASSERT_EQ(::symlink(victim.c_str(), dir.Join("out.plan").c_str()), 0);
  auto out = OutputFile::Open(dir.Join("out.plan"));
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(test::StatusIs(out.status(), Status::Code::kInvalidArgument, dir.Join("out.plan") + " is a symbolic link"));
  EXPECT_EQ(test::ReadFile(victim), "precious");
  EXPECT_EQ(test::ListDir(dir.path()), (std::vector<std::string>{"out.plan", "victim"}));
}

TEST(OutputFile, SymlinkToADeviceIsRefused) {
  TempDir dir;
  ASSERT_EQ(::symlink("/dev/null", dir.Join("out.idx").c_str()), 0);
  EXPECT_TRUE(test::StatusIs(OutputFile::Open(dir.Join("out.idx")).status(), Status::Code::kInvalidArgument,
                             "symbolic link"));
}

TEST(OutputFile, BlockDeviceIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a device node";
  TempDir dir;
  // A loop device number far beyond those that exist: nothing could be written even if
  // the rule failed.
  ASSERT_EQ(::mknod(dir.Join("disk").c_str(), S_IFBLK | 0600, makedev(7, 1000)), 0);
  auto out = OutputFile::Open(dir.Join("disk"));
  EXPECT_TRUE(test::StatusIs(out.status(), Status::Code::kInvalidArgument, "is a block device"));
}

TEST(OutputFile, DirectoryIsRefused) {
  TempDir dir;
  EXPECT_TRUE(test::StatusIs(OutputFile::Open(dir.path()).status(), Status::Code::kInvalidArgument, "directory"));
  EXPECT_TRUE(test::StatusIs(OutputFile::Open(dir.path() + "/").status(), Status::Code::kInvalidArgument, "directory"));
}

TEST(OutputFile, DevNullIsWrittenInPlace) {
  auto out = OutputFile::Open("/dev/null");
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(::write((*out)->fd(), "data", 4), 4);
  ASSERT_OK((*out)->Commit());
  struct stat st;
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFile, FifoIsWrittenInPlace) {
  TempDir dir;
  const std::string fifo = dir.Join("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = test::ReadFile(fifo); });
  {
    auto out = OutputFile::Open(fifo);
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(::write((*out)->fd(), "through the pipe", 16), 16);
    ASSERT_OK((*out)->Commit());
  }
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_EQ(test::ListDir(dir.path()), std::vector<std::string>{"pipe"});
}

TEST(OutputFile, ExistingHardlinkIsReplacedNotWrittenThrough) {
  TempDir dir;
  test::WriteFile(dir.Join("victim"), "precious");
  ASSERT_EQ(::link(dir.Join("victim").c_str(), dir.Join("out").c_str()), 0);
  auto out = OutputFile::Open(dir.Join("out"));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(::write((*out)->fd(), "new", 3), 3);
  ASSERT_OK((*out)->Commit());
  EXPECT_EQ(test::ReadFile(dir.Join("out")), "new");
  EXPECT_EQ(test::ReadFile(dir.Join("victim")), "precious");
}

TEST(OutputFile, KilledWriterLeavesNothing) {
  TempDir dir;
  test::WriteFile(dir.Join("out.idx"), "old");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto out = OutputFile::Open(dir.Join("out.idx"));
    if (!out.ok() || ::write((*out)->fd(), "partial", 7) != 7) ::_exit(1);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(test::ListDir(dir.path()), std::vector<std::string>{"out.idx"});
  EXPECT_EQ(test::ReadFile(dir.Join("out.idx")), "old");
}

TEST(OutputFile, StaleTemporariesOfDeadWritersAreRemoved) {
  TempDir dir;
  pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string stale = ".out.idx.oans-tmp-" + std::to_string(dead) + "-17";
  const std::string live = ".out.idx.oans-tmp-" + std::to_string(::getpid()) + "-18";
  const std::string other = ".other.oans-tmp-" + std::to_string(dead) + "-19";
  for (const auto& n : {stale, live, other}) test::WriteFile(dir.Join(n), "x");
  ASSERT_EQ(::symlink("/etc/passwd", dir.Join(".out.idx.oans-tmp-" + std::to_string(dead) + "-20").c_str()), 0);
  auto out = OutputFile::Open(dir.Join("out.idx"));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_OK((*out)->Commit());
  auto names = test::ListDir(dir.path());
  EXPECT_EQ(std::count(names.begin(), names.end(), stale), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), live), 1);   // its writer still runs
  EXPECT_EQ(std::count(names.begin(), names.end(), other), 1);  // another target's
  EXPECT_EQ(names.size(), 4u);                                  // the symlink is not ours: kept
}

}  // namespace
}  // namespace oans
