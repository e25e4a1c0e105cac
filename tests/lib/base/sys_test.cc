// The real system interface's reads into the page cache (Sys::Populate, Sys::WillNeed).
#include "lib/base/sys.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

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

// A range longer than the kernel's read-ahead window is requested whole: one
// POSIX_FADV_WILLNEED call reads at most that window and drops the rest silently, so a
// prefetch would leave every large file's tail to be read later, out of disk order.
TEST(SysWillNeed, RequestsAWholeRangeLongerThanTheReadAheadWindow) {
  test::TempDir dir;
  const size_t size = 64u << 20;  // larger than any read-ahead window a test machine has
  test::WriteFile(dir.Join("f"), std::string(size, 'w'));
  const int fd = ::open(dir.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fdatasync(fd), 0);
  const long page = ::sysconf(_SC_PAGESIZE);
  const size_t pages = (size + page - 1) / page;
  auto resident = [&] {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    EXPECT_NE(map, MAP_FAILED);
    if (map == MAP_FAILED) return size_t(0);
    std::vector<unsigned char> vec(pages);
    EXPECT_EQ(::mincore(map, size, vec.data()), 0);
    ::munmap(map, size);
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
  };
  DefaultSys().DontNeed(fd, 0, size);
  if (resident() != 0) {
    ::close(fd);
    GTEST_SKIP() << "this filesystem keeps its pages cached (tmpfs?): read-ahead cannot be seen";
  }
  DefaultSys().WillNeed(fd, 0, size);
  // mincore counts a page once it is read: wait for the reads the call started.
  size_t now = 0;
  // Up to 30 s on a loaded machine; it is usually a few ms.
  for (int i = 0; i < 1200 && (now = resident()) < pages; ++i) ::usleep(25 * 1000);
  EXPECT_EQ(now, pages);
  ::close(fd);
}

// A range claiming far more than the file holds (a damaged plan's) is asked for up to the
// end of the file, not in calls all the way to its claimed end.
// Calls all the way would be billions and take hours: the bound only tells that apart
// from the few calls to the end of the file, however loaded the machine is.
TEST(SysWillNeed, ARangePastTheEndOfTheFileStopsAtIt) {
  test::TempDir dir;
  test::WriteFile(dir.Join("f"), std::string(1 << 20, 'e'));
  const int fd = ::open(dir.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  DefaultSys().WillNeed(fd, 0, uint64_t(1) << 62);
  DefaultSys().WillNeed(fd, uint64_t(1) << 40, uint64_t(1) << 62);
  DefaultSys().WillNeed(fd, 4096, UINT64_MAX - 4096);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  ::close(fd);
}
}  // namespace
}  // namespace oans

namespace oans {
namespace {

// The device path of a tree read-ahead comes from the filesystem: whatever it names is
// looked at before it is opened, so a FIFO (which would block an open for reading), a
// symlink to one, or a regular file is refused, never read.
TEST(SysFiemapRange, GivesOnlyTheExtentsOverlappingTheRange) {
  test::TempDir dir;
  const std::string path = dir.Join("sparse");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string block(4096, 'x');
  ASSERT_EQ(::pwrite(fd, block.data(), block.size(), 0), 4096);
  ASSERT_EQ(::pwrite(fd, block.data(), block.size(), 1 << 20), 4096);  // a hole between
  ASSERT_EQ(::fsync(fd), 0);
  Sys& sys = DefaultSys();
  std::vector<FiemapExtent> all, first, second, none;
  Status st = sys.Fiemap(fd, &all);
  if (!st.ok() || all.size() != 2) {
    ::close(fd);
    GTEST_SKIP() << "this filesystem does not map the file in two extents: " << st.message();
  }
  EXPECT_OK(sys.FiemapRange(fd, 0, 4096, &first));
  EXPECT_OK(sys.FiemapRange(fd, 512 << 10, 1 << 20, &second));
  EXPECT_OK(sys.FiemapRange(fd, 8192, 4096, &none));
  ::close(fd);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].logical, 0u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].logical, 1u << 20);
  EXPECT_TRUE(none.empty());
}

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
