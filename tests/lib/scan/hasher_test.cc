#include "lib/scan/hasher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

// Opens a file with the given content in a temp dir and closes it at the end.
class HashFixture {
 public:
  explicit HashFixture(const std::string& content) : content_(content) {
    test::WriteFile(dir_.Join("f"), content);
    fd_ = ::open(dir_.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd_, 0);
  }
  ~HashFixture() { ::close(fd_); }
  int fd() const { return fd_; }
  const std::string& content() const { return content_; }
  std::string path() const { return dir_.Join("f"); }

 private:
  TempDir dir_;
  std::string content_;
  int fd_ = -1;
};

void ExpectHashes(const FileHashes& h, const std::string& content, uint32_t bs) {
  EXPECT_EQ(h.whole, HashBytes(content.data(), content.size()));
  EXPECT_EQ(h.bytes_read, content.size());
  ASSERT_EQ(h.blocks.size(), (content.size() + bs - 1) / bs);
  for (size_t b = 0; b < h.blocks.size(); ++b) {
    size_t off = b * bs;
    EXPECT_EQ(h.blocks[b], HashBytes(content.data() + off, std::min<size_t>(bs, content.size() - off))) << b;
  }
}

TEST(Hasher, HashBytesIsContentDependent) {
  const std::string a = "hello", b = "hellp";
  EXPECT_EQ(HashBytes(a.data(), a.size()), HashBytes(a.data(), a.size()));
  EXPECT_NE(HashBytes(a.data(), a.size()), HashBytes(b.data(), b.size()));
  EXPECT_NE(HashBytes(a.data(), 4), HashBytes(a.data(), 5));
  Hash128 h = HashBytes(a.data(), a.size());
  EXPECT_NE(h.hi, h.lo);
}

TEST(Hasher, KnownContentPartialLastBlock) {
  const uint32_t bs = 64 * 1024;
  HashFixture f(test::RandomBytes(300000, 11));  // 4 full blocks and a partial one
  std::vector<char> buf;
  auto h = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->blocks.size(), 5u);
  ExpectHashes(*h, f.content(), bs);
}

TEST(Hasher, SpansSeveralBuffers) {
  // 2.5 MiB with 128 KiB blocks crosses the 256 KiB buffer nine times.
  const uint32_t bs = 128 * 1024;
  HashFixture f(test::RandomBytes((5u << 20) / 2 + 4096, 12));
  std::vector<char> buf;
  std::atomic<uint64_t> progress{0};
  auto h = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf, &progress});
  ASSERT_TRUE(h.ok()) << h.status().message();
  ExpectHashes(*h, f.content(), bs);
  EXPECT_EQ(progress.load(), f.content().size());
  EXPECT_EQ(buf.size() % bs, 0u);  // the buffer holds whole blocks

  // The same buffer reused for another file gives the same answer.
  auto again = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->whole, h->whole);
  EXPECT_EQ(again->blocks, h->blocks);
}

TEST(Hasher, BlockLargerThanBuffer) {
  const uint32_t bs = 3u << 20;  // 3 MiB block, more than the default 256 KiB buffer
  HashFixture f(test::RandomBytes(7u << 20, 13));
  std::vector<char> buf;
  auto h = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->blocks.size(), 3u);
  ExpectHashes(*h, f.content(), bs);
}

TEST(Hasher, ExactMultipleOfBlockSize) {
  const uint32_t bs = 4096;
  HashFixture f(test::RandomBytes(4096 * 3, 14));
  std::vector<char> buf;
  auto h = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->blocks.size(), 3u);
  ExpectHashes(*h, f.content(), bs);
}

TEST(Hasher, IdenticalBlocksHashEqual) {
  const uint32_t bs = 4096;
  std::string block = test::RandomBytes(bs, 15);
  HashFixture f(block + test::RandomBytes(bs, 16) + block);
  std::vector<char> buf;
  auto h = HashFile(DefaultSys(), f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->blocks.size(), 3u);
  EXPECT_EQ(h->blocks[0], h->blocks[2]);
  EXPECT_NE(h->blocks[0], h->blocks[1]);
}

TEST(Hasher, EmptyFile) {
  HashFixture f("");
  std::vector<char> buf;
  auto h = HashFile(DefaultSys(), f.fd(), 0, {4096, &buf});
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->blocks.empty());
  EXPECT_EQ(h->whole, HashBytes("", 0));
  EXPECT_EQ(h->bytes_read, 0u);
}

TEST(Hasher, ZeroBlockSizeRejected) {
  HashFixture f("abc");
  std::vector<char> buf;
  EXPECT_EQ(HashFile(DefaultSys(), f.fd(), 3, {0, &buf}).status().code(), Status::Code::kInvalidArgument);
}

// Returns at most `max` bytes per read, and from a chosen offset on, EOF or an error.
class ShortReadSys : public test::ForwardingSys {
 public:
  size_t max = SIZE_MAX;
  uint64_t eof_at = UINT64_MAX;
  uint64_t eio_at = UINT64_MAX;
  std::atomic<int> calls{0};
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    calls++;
    if (offset >= eio_at) return Status::Io("read", EIO);
    if (offset >= eof_at) return size_t(0);
    if (eof_at != UINT64_MAX) len = size_t(std::min<uint64_t>(len, eof_at - offset));
    return ForwardingSys::Pread(fd, buf, std::min(len, max), offset);
  }
};

TEST(Hasher, ShortReadsStillHashEverything) {
  const uint32_t bs = 8192;
  HashFixture f(test::RandomBytes(100000, 17));
  ShortReadSys sys;
  sys.max = 1000;
  std::vector<char> buf;
  auto h = HashFile(sys, f.fd(), f.content().size(), {bs, &buf});
  ASSERT_TRUE(h.ok()) << h.status().message();
  ExpectHashes(*h, f.content(), bs);
  EXPECT_GE(sys.calls.load(), 100);
}

TEST(Hasher, EarlyEofIsShrank) {
  HashFixture f(test::RandomBytes(300000, 18));
  ShortReadSys sys;
  sys.eof_at = 200000;
  std::vector<char> buf;
  auto h = HashFile(sys, f.fd(), f.content().size(), {65536, &buf});
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(test::StatusIs(h.status(), Status::Code::kMismatch, "shrank"));
  // A real file shorter than the size given.
  auto r = HashFile(DefaultSys(), f.fd(), f.content().size() + 1, {65536, &buf});
  EXPECT_TRUE(test::StatusIs(r.status(), Status::Code::kMismatch, "shrank"));
}

TEST(Hasher, GrowthDetected) {
  HashFixture f(test::RandomBytes(10000, 19));
  std::vector<char> buf;
  // The file holds more than the size the walk saw.
  auto h = HashFile(DefaultSys(), f.fd(), 9999, {4096, &buf});
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(test::StatusIs(h.status(), Status::Code::kMismatch, "grew"));
  // Growth exactly at a buffer boundary.
  HashFixture g(test::RandomBytes((1u << 20) + 1, 20));
  h = HashFile(DefaultSys(), g.fd(), 1u << 20, {4096, &buf});
  EXPECT_TRUE(test::StatusIs(h.status(), Status::Code::kMismatch, "grew"));
}

TEST(Hasher, ReadErrorPropagated) {
  HashFixture f(test::RandomBytes(3u << 20, 21));
  ShortReadSys sys;
  sys.eio_at = 2u << 20;
  std::vector<char> buf;
  auto h = HashFile(sys, f.fd(), f.content().size(), {131072, &buf});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), Status::Code::kIoError);
  EXPECT_EQ(h.status().errnum(), EIO);
  // An error on the very first read too.
  sys.eio_at = 0;
  h = HashFile(sys, f.fd(), f.content().size(), {131072, &buf});
  EXPECT_EQ(h.status().errnum(), EIO);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// A file of any size that exists only here: `data` holds the bytes of each data segment
// (at its offset); everything else is hole, reading as zeros. Counts the bytes read.
class SparseSys : public test::ForwardingSys {
 public:
  SparseSys(uint64_t size, std::map<uint64_t, std::string> data) : size_(size), data_(std::move(data)) {}
  Result<size_t> Pread(int, void* buf, size_t len, uint64_t offset) override {
    if (offset >= size_) return size_t(0);
    len = size_t(std::min<uint64_t>(len, size_ - offset));
    std::memset(buf, 0, len);
    for (const auto& [at, bytes] : data_) {
      const uint64_t lo = std::max(at, offset), hi = std::min(at + bytes.size(), offset + len);
      if (lo < hi) std::memcpy(static_cast<char*>(buf) + (lo - offset), bytes.data() + (lo - at), hi - lo);
    }
    read_ += len;
    if (stop_after_ && read_ >= stop_after_) stop_->store(true);
    return len;
  }
  uint64_t Seek(int, uint64_t offset, bool hole) override {
    if (!holes_) return hole ? UINT64_MAX : offset;
    for (const auto& [at, bytes] : data_) {
      if (offset >= at + bytes.size()) continue;
      if (!hole) return std::max(at, offset);
      return offset >= at ? at + bytes.size() : offset;
    }
    return hole ? size_ : UINT64_MAX;
  }
  uint64_t read_ = 0;
  bool holes_ = true;  // false: like a filesystem that reports no holes
  uint64_t stop_after_ = 0;
  std::atomic<bool>* stop_ = nullptr;

 private:
  uint64_t size_;
  std::map<uint64_t, std::string> data_;
};

// A 4 EiB file with two 64 KiB pieces of data: hashed in the time and memory of its
// data, with no block hashes (there would be 2^45), and the same key every time.
TEST(Hasher, HugeSparseFileCostsItsData) {
  const uint64_t size = uint64_t(1) << 62;
  const uint32_t bs = 128 * 1024;
  SparseSys sys(size, {{0, test::RandomBytes(65536, 1)}, {size - 65536, test::RandomBytes(65536, 2)}});
  std::vector<char> buf;
  test::ResetLargestAllocation();
  auto h = HashFile(sys, -1, size, {bs, &buf});
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->sparse);
  EXPECT_TRUE(h->blocks.empty());
  EXPECT_LE(sys.read_, uint64_t(4) << 20);
  EXPECT_LT(test::LargestAllocation(), size_t(8) << 20);
  SparseSys again(size, {{0, test::RandomBytes(65536, 1)}, {size - 65536, test::RandomBytes(65536, 2)}});
  auto h2 = HashFile(again, -1, size, {bs, &buf});
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(h2->whole, h->whole);
  // Other data, or the same data elsewhere: another key.
  SparseSys other(size, {{0, test::RandomBytes(65536, 1)}, {size - 65536, test::RandomBytes(65536, 3)}});
  SparseSys moved(size, {{bs, test::RandomBytes(65536, 1)}, {size - 65536, test::RandomBytes(65536, 2)}});
  EXPECT_NE(HashFile(other, -1, size, {bs, &buf})->whole, h->whole);
  EXPECT_NE(HashFile(moved, -1, size, {bs, &buf})->whole, h->whole);
}

// A small sparse file keeps its block hashes (holes as zero blocks, without reading);
// its key is the sparse key, never the plain content hash a dense copy gets.
TEST(Hasher, SparseKeyIsNotTheDenseKey) {
  const uint32_t bs = 64 * 1024;
  const uint64_t size = 64 * bs;
  const std::string piece = test::RandomBytes(bs, 5);
  SparseSys sparse(size, {{10 * bs, piece}});
  SparseSys dense(size, {{10 * bs, piece}});
  dense.holes_ = false;
  std::vector<char> buf;
  auto s = HashFile(sparse, -1, size, {bs, &buf});
  auto d = HashFile(dense, -1, size, {bs, &buf});
  ASSERT_TRUE(s.ok() && d.ok());
  EXPECT_TRUE(s->sparse);
  EXPECT_FALSE(d->sparse);
  EXPECT_NE(s->whole, d->whole);
  EXPECT_EQ(s->blocks, d->blocks);  // block hashes are content hashes either way
  EXPECT_LT(sparse.read_, dense.read_);
  std::string content(size, '\0');
  content.replace(10 * bs, bs, piece);
  EXPECT_EQ(d->whole, HashBytes(content.data(), content.size()));
}

// The stop flag is checked between reads: a 1 TiB file that reads as data stops at once.
TEST(Hasher, StopFlagStopsInsideAFile) {
  const uint64_t size = uint64_t(1) << 40;
  SparseSys sys(size, {{0, "x"}});
  sys.holes_ = false;
  std::atomic<bool> stop{false};
  sys.stop_ = &stop;
  sys.stop_after_ = 8 << 20;
  std::vector<char> buf;
  auto h = HashFile(sys, -1, size, {128 * 1024, &buf, nullptr, &stop});
  EXPECT_TRUE(test::StatusIs(h.status(), Status::Code::kInterrupted));
  EXPECT_LE(sys.read_, uint64_t(9) << 20);
}

}  // namespace
}  // namespace oans
