// The real system interface's reads into the page cache (Sys::Populate).
#include "lib/base/sys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

// Every byte of a file is read, in as many calls as it takes, then 0 at the end; a
// descriptor that cannot be read is an error, not a silent success.
TEST(SysPopulate, ReadsAFileToItsEndAndSaysSo) {
  test::TempDir dir;
  const std::string data(3 * 1024 * 1024 + 123, 'q');
  test::WriteFile(dir.Join("f"), data);
  const int fd = ::open(dir.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<char> buffer(1 << 20);
  uint64_t total = 0;
  for (int calls = 0; calls < 100; ++calls) {
    auto n = DefaultSys().Populate(fd, total, data.size() + 4096 - total, &buffer);
    ASSERT_OK(n.status());
    if (*n == 0) break;
    total += *n;
  }
  EXPECT_EQ(total, data.size());
  auto past = DefaultSys().Populate(fd, data.size(), 4096, &buffer);
  ASSERT_OK(past.status());
  EXPECT_EQ(*past, 0u);
  ::close(fd);
  const int wfd = ::open(dir.Join("f").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(wfd, 0);
  EXPECT_FALSE(DefaultSys().Populate(wfd, 0, 4096, &buffer).ok());
  ::close(wfd);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// The device path of a tree read-ahead comes from the filesystem: whatever it names is
// looked at before it is opened, so a FIFO (which would block an open for reading), a
// symlink to one, or a regular file is refused, never read.
TEST(SysOpenBlockDevice, RefusesWhatIsNotABlockDevice) {
  test::TempDir dir;
  const std::string fifo = dir.Join("fifo"), link = dir.Join("link"), file = dir.Join("file");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  test::WriteFile(file, "not a device");
  for (const std::string& p : {fifo, link, file, std::string("/dev/null")}) {
    auto fd = DefaultSys().OpenBlockDevice(p);
    EXPECT_FALSE(fd.ok()) << p;
    if (fd.ok()) ::close(*fd);
  }
}

}  // namespace
}  // namespace oans
