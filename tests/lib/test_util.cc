#include "tests/lib/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>

namespace {
std::atomic<size_t> g_largest_alloc{0};
}  // namespace

#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Global operator new that records the largest request, so tests can check that a hostile
// length field does not make the reader allocate what it claims.
void* operator new(size_t n) {
  size_t prev = g_largest_alloc.load(std::memory_order_relaxed);
  while (n > prev && !g_largest_alloc.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return ::operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace oans::test {

void ResetLargestAllocation() { g_largest_alloc.store(0); }
size_t LargestAllocation() { return g_largest_alloc.load(); }

namespace {

// Removes everything inside the directory open at dfd, then closes dfd.
void RemoveContents(int dfd) {
  DIR* d = fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names) {
    struct stat st;
    if (fstatat(dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      fchmodat(dirfd(d), n.c_str(), 0700, 0);
      int sub = openat(dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) RemoveContents(sub);
      unlinkat(dirfd(d), n.c_str(), AT_REMOVEDIR);
    } else {
      unlinkat(dirfd(d), n.c_str(), 0);
    }
  }
  closedir(d);
}

}  // namespace

void RemoveTree(const std::string& path) {
  ::chmod(path.c_str(), 0700);
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) RemoveContents(fd);
  ::rmdir(path.c_str());
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/oans-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    return;
  }
  // realpath so that paths compare equal to what CanonicalRoot makes of them.
  char* real = ::realpath(buf.data(), nullptr);
  path_ = real ? real : buf.data();
  std::free(real);
}

TempDir::~TempDir() {
  if (!path_.empty()) RemoveTree(path_);
}

void WriteFile(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << "creating " << path << ": " << std::strerror(errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    ASSERT_GT(n, 0) << "writing " << path << ": " << std::strerror(errno);
    off += size_t(n);
  }
  ASSERT_EQ(::close(fd), 0);
}

std::string ReadFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ADD_FAILURE() << "opening " << path << ": " << std::strerror(errno);
    return out;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

FileStat StatPath(const std::string& path) {
  FileStat out;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    ADD_FAILURE() << "stat " << path << ": " << std::strerror(errno);
    return out;
  }
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.size = uint64_t(st.st_size);
  out.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out.ctime_ns = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  out.mode = st.st_mode;
  out.nlink = uint32_t(st.st_nlink);
  out.blocks = uint64_t(st.st_blocks);
  return out;
}

void MakeDir(const std::string& path) {
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << "mkdir " << path << ": " << std::strerror(errno);
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (!d) {
    ADD_FAILURE() << "opendir " << path << ": " << std::strerror(errno);
    return out;
  }
  while (struct dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

const char* CodeName(Status::Code c) {
  switch (c) {
    case Status::Code::kOk: return "kOk";
    case Status::Code::kInvalidArgument: return "kInvalidArgument";
    case Status::Code::kIoError: return "kIoError";
    case Status::Code::kCorrupt: return "kCorrupt";
    case Status::Code::kVersion: return "kVersion";
    case Status::Code::kMismatch: return "kMismatch";
    case Status::Code::kInterrupted: return "kInterrupted";
    case Status::Code::kBusy: return "kBusy";
    case Status::Code::kUnsupported: return "kUnsupported";
  }
  return "?";
}

::testing::AssertionResult StatusIs(const Status& s, Status::Code code, const std::string& part) {
  if (s.code() != code)
    return ::testing::AssertionFailure() << "code " << CodeName(s.code()) << " (want " << CodeName(code)
                                         << "), message: " << s.message();
  if (s.message().find(part) == std::string::npos)
    return ::testing::AssertionFailure() << "message \"" << s.message() << "\" lacks \"" << part << "\"";
  return ::testing::AssertionSuccess();
}

FsRecord BtrfsFs(const std::string& uuid, uint64_t subvolume, uint64_t dev, const std::string& mount_point) {
  FsRecord f;
  f.uuid = uuid;
  f.subvolume = subvolume;
  f.dev = dev;
  f.type = "btrfs";
  f.block_size = 4096;
  f.mount_point = mount_point;
  return f;
}

void ExpectSameExtents(const std::vector<FiemapExtent>& got, const std::vector<FiemapExtent>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].logical, want[k].logical) << "extent " << k;
    EXPECT_EQ(got[k].physical, want[k].physical) << "extent " << k;
    EXPECT_EQ(got[k].length, want[k].length) << "extent " << k;
    EXPECT_EQ(got[k].flags, want[k].flags) << "extent " << k;
  }
}

void WriteIndex(const std::string& path, const IndexHeader& header, const std::vector<FileEntry>& files,
                size_t batch_records, bool finish) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok()) << out.status().message();
  IndexWriter w(out->get(), batch_records);
  ASSERT_OK(w.WriteHeader(header));
  for (const auto& f : files) ASSERT_OK(w.Add(f));
  if (finish) {
    ASSERT_OK(w.Finish());
  } else {
    ASSERT_OK(w.Flush());
  }
  ASSERT_OK((*out)->Commit());
}

void WritePlan(const std::string& path, const PlanHeader& header, const std::vector<PlanRound>& rounds,
               bool finish) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok()) << out.status().message();
  PlanWriter w(out->get());
  ASSERT_OK(w.WriteHeader(header));
  for (const auto& r : rounds) ASSERT_OK(w.AddRound(r));
  if (finish) ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
}

std::vector<PlanRound> ReadAllRounds(const std::string& path, PlanHeader* header) {
  std::vector<PlanRound> rounds;
  auto reader = PlanReader::Open(path);
  if (!reader.ok()) {
    ADD_FAILURE() << reader.status().message();
    return rounds;
  }
  if (header) *header = (*reader)->header();
  for (;;) {
    PlanRound r;
    auto more = (*reader)->Next(&r);
    if (!more.ok()) {
      ADD_FAILURE() << more.status().message();
      break;
    }
    if (!*more) break;
    rounds.push_back(std::move(r));
  }
  return rounds;
}

}  // namespace oans::test
