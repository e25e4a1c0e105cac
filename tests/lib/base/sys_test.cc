// The real system interface's reads into the page cache (Sys::Populate).
#include "lib/base/sys.h"

#include <fcntl.h>
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
