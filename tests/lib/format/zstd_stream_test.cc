#include "lib/format/zstd_stream.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>

#include "format/index.capnp.h"
#include "lib/format/frame_stream.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

// An index-batch message with one record whose path is `path`; returns its flat bytes.
std::string MakeMessage(capnp::MallocMessageBuilder& msg, const std::string& path, uint64_t ino) {
  auto files = msg.initRoot<schema::IndexFrame>().initBatch().initFiles(1);
  files[0].setPath(kj::arrayPtr(reinterpret_cast<const kj::byte*>(path.data()), path.size()));
  files[0].setIno(ino);
  auto words = capnp::messageToFlatArray(msg);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

struct Written {
  std::vector<std::string> messages;  // flat bytes of each message
  std::vector<uint64_t> ends;         // file offset where each message's frame ends
  std::string file;                   // the whole file
};

// Writes messages with the given paths through a FrameWriter into `path`.
Written WriteMessages(const std::string& path, const std::vector<std::string>& paths) {
  Written w;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  FrameWriter fw(fd, path);
  for (size_t i = 0; i < paths.size(); ++i) {
    capnp::MallocMessageBuilder msg;
    w.messages.push_back(MakeMessage(msg, paths[i], i + 1));
    EXPECT_OK(fw.Write(msg));
    w.ends.push_back(fw.bytes_out());
  }
  ::close(fd);
  w.file = test::ReadFile(path);
  EXPECT_EQ(w.file.size(), w.ends.back());
  return w;
}

struct ReadOutcome {
  std::vector<std::string> messages;
  Status error;  // OK when the stream ended cleanly
};

ReadOutcome ReadMessages(const std::string& path) {
  ReadOutcome out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  FrameReader fr(fd, path);
  for (int guard = 0; guard < 1000; ++guard) {
    kj::Array<capnp::word> words;
    auto r = fr.Next(&words);
    if (!r.ok()) {
      out.error = r.status();
      break;
    }
    if (!*r) break;
    auto bytes = words.asBytes();
    out.messages.emplace_back(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  }
  ::close(fd);
  return out;
}

TEST(ZstdStream, RoundTripFramesThroughFile) {
  TempDir dir;
  const std::string path = dir.Join("z");
  const std::string a = "hello", b = test::RandomBytes(300000, 1), c(1 << 20, 'x');
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  {
    ZstdWriter w(fd, path);
    ASSERT_OK(w.Write(a.data(), a.size()));
    ASSERT_OK(w.EndFrame());
    ASSERT_OK(w.Write(b.data(), b.size()));
    ASSERT_OK(w.EndFrame());
    // A frame written in pieces.
    ASSERT_OK(w.Write(c.data(), 1000));
    ASSERT_OK(w.Write(c.data() + 1000, c.size() - 1000));
    ASSERT_OK(w.EndFrame());
    ASSERT_OK(w.EndFrame());  // nothing open: no empty frame
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(uint64_t(st.st_size), w.bytes_out());
    EXPECT_LT(w.bytes_out(), a.size() + b.size() + c.size());  // the 'x' run compressed
  }
  ::close(fd);

  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ZstdReader r(fd, path);
  std::string got(a.size(), '\0');
  auto ok = r.ReadExact(got.data(), got.size());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(*ok);
  EXPECT_EQ(got, a);
  EXPECT_TRUE(r.at_frame_boundary());
  // Read the second frame in odd-sized pieces.
  got.assign(b.size(), '\0');
  size_t done = 0;
  while (done < b.size()) {
    size_t n = std::min<size_t>(7777, b.size() - done);
    auto p = r.ReadExact(got.data() + done, n);
    ASSERT_TRUE(p.ok() && *p) << p.status().message();
    done += n;
    if (done < b.size()) {
      EXPECT_FALSE(r.at_frame_boundary()) << done;
    }
  }
  EXPECT_EQ(got, b);
  EXPECT_TRUE(r.at_frame_boundary());
  got.assign(c.size(), '\0');
  ok = r.ReadExact(got.data(), got.size());
  ASSERT_TRUE(ok.ok() && *ok) << ok.status().message();
  EXPECT_EQ(got, c);
  char one;
  ok = r.ReadExact(&one, 1);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_FALSE(*ok);  // clean end
  EXPECT_EQ(r.bytes_in(), test::StatPath(path).size);
  ::close(fd);
}

TEST(ZstdStream, PartialReadAtEndIsTruncation) {
  TempDir dir;
  const std::string path = dir.Join("z");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  {
    ZstdWriter w(fd, path);
    ASSERT_OK(w.Write("0123456789", 10));
    ASSERT_OK(w.EndFrame());
  }
  ::close(fd);
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ZstdReader r(fd, path);
  char buf[20];
  auto res = r.ReadExact(buf, sizeof buf);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(test::StatusIs(res.status(), Status::Code::kCorrupt, "truncated"));
  EXPECT_NE(res.status().message().find(path), std::string::npos);
  ::close(fd);
}

TEST(ZstdStream, EmptyInputIsCleanEnd) {
  TempDir dir;
  test::WriteFile(dir.Join("empty"), "");
  int fd = ::open(dir.Join("empty").c_str(), O_RDONLY | O_CLOEXEC);
  ZstdReader r(fd, "empty");
  char c;
  auto res = r.ReadExact(&c, 1);
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(*res);
  ::close(fd);
}

TEST(ZstdStream, GarbageIsCorrupt) {
  TempDir dir;
  test::WriteFile(dir.Join("g"), "this is not zstd at all, just some text");
  int fd = ::open(dir.Join("g").c_str(), O_RDONLY | O_CLOEXEC);
  ZstdReader r(fd, "g");
  char c[4];
  auto res = r.ReadExact(c, 4);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(test::StatusIs(res.status(), Status::Code::kCorrupt, "damaged"));
  ::close(fd);
}

TEST(FrameStream, RoundTripMessages) {
  TempDir dir;
  Written w = WriteMessages(dir.Join("f"), {"/a", test::RandomBytes(100000, 2), std::string(70000, 'q'), ""});
  ReadOutcome r = ReadMessages(dir.Join("f"));
  ASSERT_TRUE(r.error.ok()) << r.error.message();
  EXPECT_EQ(r.messages, w.messages);
}

TEST(FrameStream, RoundTripThroughPipe) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::vector<std::string> sent;
  // Larger than a pipe's buffer, so writer and reader must interleave.
  std::vector<std::string> paths = {"/x", test::RandomBytes(3 << 20, 3), "/y", std::string(1 << 20, 'z')};
  for (auto& s : paths) {
    capnp::MallocMessageBuilder m;
    sent.push_back(MakeMessage(m, s, 0));
  }
  Status write_status;
  std::thread writer([&] {
    FrameWriter fw(p[1], "pipe");
    for (size_t i = 0; i < paths.size(); ++i) {
      capnp::MallocMessageBuilder m;
      MakeMessage(m, paths[i], 0);
      write_status = fw.Write(m);
      if (!write_status.ok()) break;
    }
    ::close(p[1]);
  });
  FrameReader fr(p[0], "pipe");
  std::vector<std::string> got;
  for (;;) {
    kj::Array<capnp::word> words;
    auto r = fr.Next(&words);
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (!*r) break;
    auto b = words.asBytes();
    got.emplace_back(reinterpret_cast<const char*>(b.begin()), b.size());
  }
  writer.join();
  ::close(p[0]);
  EXPECT_OK(write_status);
  EXPECT_EQ(got, sent);
}

TEST(FrameStream, WriteToClosedPipeFails) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[0]);
  auto old = ::signal(SIGPIPE, SIG_IGN);
  FrameWriter fw(p[1], "pipe");
  capnp::MallocMessageBuilder m;
  MakeMessage(m, "/a", 1);
  Status s = fw.Write(m);
  ::signal(SIGPIPE, old);
  ::close(p[1]);
  EXPECT_TRUE(test::StatusIs(s, Status::Code::kIoError, "pipe"));
  EXPECT_EQ(s.errnum(), EPIPE);
}

// Cutting a multi-frame file at every byte offset: a cut at a frame boundary is a clean
// end after the frames before it; any other cut is kCorrupt. Never a crash, never a message
// that differs from what was written, never a complete frame lost.
TEST(FrameStream, TruncationAtEveryOffset) {
  TempDir dir;
  Written w = WriteMessages(dir.Join("full"), {"/first", "/second/" + std::string(40, 's'), "/third"});
  ASSERT_EQ(w.messages.size(), 3u);
  const std::string cut = dir.Join("cut");
  for (size_t len = 0; len <= w.file.size(); ++len) {
    SCOPED_TRACE("cut at " + std::to_string(len) + " of " + std::to_string(w.file.size()));
    test::WriteFile(cut, w.file.substr(0, len));
    ReadOutcome r = ReadMessages(cut);
    size_t complete = 0;
    bool boundary = len == 0;
    for (size_t k = 0; k < w.ends.size(); ++k) {
      if (w.ends[k] <= len) complete = k + 1;
      if (w.ends[k] == len) boundary = true;
    }
    ASSERT_LE(r.messages.size(), w.messages.size());
    for (size_t k = 0; k < r.messages.size(); ++k) EXPECT_EQ(r.messages[k], w.messages[k]) << "message " << k;
    EXPECT_GE(r.messages.size(), complete);
    if (boundary) {
      EXPECT_TRUE(r.error.ok()) << r.error.message();
      EXPECT_EQ(r.messages.size(), complete);
    } else {
      EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "truncated"));
      EXPECT_NE(r.error.message().find(cut), std::string::npos) << r.error.message();
      // Only the complete frames, exactly.
      EXPECT_EQ(r.messages.size(), complete);
    }
  }
}

// Flipping any byte either is caught as kCorrupt or (for bits zstd does not need, such as
// the window size) changes nothing; it never yields different data.
TEST(FrameStream, FlippedByteIsCorruptNeverWrongData) {
  TempDir dir;
  // The random path makes the second frame a raw (stored) block.
  Written w = WriteMessages(dir.Join("full"), {"/first", test::RandomBytes(2000, 4), "/third"});
  const std::string bad = dir.Join("bad");
  int corrupt = 0;
  for (size_t pos = 0; pos < w.file.size(); ++pos) {
    SCOPED_TRACE("flip at " + std::to_string(pos));
    std::string f = w.file;
    f[pos] = char(f[pos] ^ 0x20);
    test::WriteFile(bad, f);
    ReadOutcome r = ReadMessages(bad);
    for (size_t k = 0; k < r.messages.size() && k < w.messages.size(); ++k)
      EXPECT_EQ(r.messages[k], w.messages[k]) << "message " << k;
    if (r.error.ok()) {
      EXPECT_EQ(r.messages, w.messages);
    } else {
      EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt));
      ++corrupt;
    }
  }
  EXPECT_GT(corrupt, int(w.file.size()) * 9 / 10);
  // Specific places that must be caught: a data byte in the middle of the stored block
  // and each byte of a frame's content checksum.
  for (size_t pos : {size_t(w.ends[0] + (w.ends[1] - w.ends[0]) / 2), size_t(w.ends[1] - 1),
                     size_t(w.ends[1] - 4), size_t(w.ends[2] - 2)}) {
    std::string f = w.file;
    f[pos] = char(f[pos] ^ 0x01);
    test::WriteFile(bad, f);
    ReadOutcome r = ReadMessages(bad);
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt)) << "flip at " << pos;
  }
}

// Writes raw bytes as one zstd frame, so the words reach FrameReader intact.
void WriteRawFrame(const std::string& path, const std::vector<uint32_t>& words32) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ZstdWriter w(fd, path);
  ASSERT_OK(w.Write(words32.data(), words32.size() * 4));
  ASSERT_OK(w.EndFrame());
  ::close(fd);
}

TEST(FrameStream, HugeLengthFieldRejected) {
  TempDir dir;
  // One segment of 2^28 words = 2 GiB, more than kMaxMessageBytes.
  WriteRawFrame(dir.Join("huge"), {0, 0x10000000u, 1, 2});
  test::ResetLargestAllocation();
  ReadOutcome r = ReadMessages(dir.Join("huge"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "1 GiB"));
  EXPECT_LT(test::LargestAllocation(), size_t(32) << 20);
  // Two segments whose sizes only together exceed the limit.
  WriteRawFrame(dir.Join("two"), {1, 0x08000000u, 0x08000000u, 0, 1, 2});
  r = ReadMessages(dir.Join("two"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "1 GiB"));
  // Four segments of 0xffffffff words each: the sum must not overflow into something small.
  WriteRawFrame(dir.Join("wrap"), {3, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0});
  r = ReadMessages(dir.Join("wrap"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt));
}

TEST(FrameStream, LengthBelowLimitButAbsentDoesNotAllocateIt) {
  TempDir dir;
  // 100M words (800 MB) claimed, 2 words present.
  WriteRawFrame(dir.Join("claim"), {0, 100000000u, 1, 2, 3, 4});
  test::ResetLargestAllocation();
  ReadOutcome r = ReadMessages(dir.Join("claim"));
  // The frame is complete: a message longer than its frame is damage, not a cut.
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "damaged"));
  EXPECT_LT(test::LargestAllocation(), size_t(32) << 20);
}

TEST(FrameStream, TooManySegmentsRejected) {
  TempDir dir;
  WriteRawFrame(dir.Join("segs"), {100000, 1, 1, 1});
  ReadOutcome r = ReadMessages(dir.Join("segs"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "segment"));
  // 0xffffffff + 1 segments must not wrap to zero.
  WriteRawFrame(dir.Join("wrap"), {0xffffffffu, 1, 1, 1});
  r = ReadMessages(dir.Join("wrap"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt));
}

TEST(FrameStream, CutInsideSegmentTable) {
  TempDir dir;
  // Three segments need two more table words, but the frame ends after the first pair.
  WriteRawFrame(dir.Join("t"), {2, 1});
  ReadOutcome r = ReadMessages(dir.Join("t"));
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt));
}

TEST(OutputFile, CommitMakesTargetAppear) {
  TempDir dir;
  const std::string target = dir.Join("out.idx");
  auto out = OutputFile::Open(target);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)->name(), target);
  EXPECT_FALSE(test::Exists(target));
  ASSERT_EQ(::write((*out)->fd(), "data", 4), 4);
  // Nothing is visible in the directory until Commit (an unnamed file).
  EXPECT_TRUE(test::ListDir(dir.path()).empty());
  ASSERT_OK((*out)->Commit());
  EXPECT_EQ(test::ReadFile(target), "data");
  EXPECT_EQ(test::ListDir(dir.path()), std::vector<std::string>{"out.idx"});
  out->reset();
  EXPECT_EQ(test::ReadFile(target), "data");
}

TEST(OutputFile, NoCommitLeavesNoFile) {
  TempDir dir;
  const std::string target = dir.Join("out.idx");
  {
    auto out = OutputFile::Open(target);
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(::write((*out)->fd(), "partial", 7), 7);
  }
  EXPECT_TRUE(test::ListDir(dir.path()).empty());
}

TEST(OutputFile, UncommittedDoesNotReplaceExisting) {
  TempDir dir;
  const std::string target = dir.Join("plan");
  test::WriteFile(target, "old");
  {
    auto out = OutputFile::Open(target);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(::write((*out)->fd(), "new", 3), 3);
  }
  EXPECT_EQ(test::ReadFile(target), "old");
  EXPECT_EQ(test::ListDir(dir.path()).size(), 1u);
  auto out = OutputFile::Open(target);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(::write((*out)->fd(), "new", 3), 3);
  ASSERT_OK((*out)->Commit());
  EXPECT_EQ(test::ReadFile(target), "new");
}

TEST(OutputFile, MissingDirectoryIsIoError) {
  TempDir dir;
  auto out = OutputFile::Open(dir.Join("no/such/dir/file"));
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(test::StatusIs(out.status(), Status::Code::kIoError, dir.Join("no/such/dir/file")));
  EXPECT_EQ(out.status().errnum(), ENOENT);
}

// Points standard output at `fd` for the lifetime of the object.
class StdoutRedirect {
 public:
  explicit StdoutRedirect(int fd) {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    ::dup2(fd, STDOUT_FILENO);
  }
  ~StdoutRedirect() {
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
  }

 private:
  int saved_;
};

TEST(OutputFile, StdoutRefusedWhenTerminal) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    if (master >= 0) ::close(master);
    GTEST_SKIP() << "no pseudo-terminal available";
  }
  const char* name = ::ptsname(master);
  int slave = name ? ::open(name, O_RDWR | O_NOCTTY) : -1;
  if (slave < 0) {
    ::close(master);
    GTEST_SKIP() << "cannot open the pseudo-terminal";
  }
  Status s;
  {
    StdoutRedirect r(slave);
    auto out = OutputFile::Open("-");
    s = out.ok() ? Status::Ok() : out.status();
  }
  ::close(slave);
  ::close(master);
  EXPECT_TRUE(test::StatusIs(s, Status::Code::kInvalidArgument, "terminal"));
}

TEST(OutputFile, StdoutAcceptedWhenPipe) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  bool ok;
  std::string name;
  int fd = -1;
  {
    StdoutRedirect r(p[1]);
    auto out = OutputFile::Open("-");
    ok = out.ok();
    if (ok) {
      name = (*out)->name();
      fd = (*out)->fd();
      ok = (*out)->Commit().ok();
    }
  }
  ::close(p[0]);
  ::close(p[1]);
  EXPECT_TRUE(ok);
  EXPECT_EQ(name, "standard output");
  EXPECT_EQ(fd, STDOUT_FILENO);
  // Standard output stays open after the OutputFile is gone.
  EXPECT_NE(::fcntl(STDOUT_FILENO, F_GETFD), -1);
}

TEST(InputFile, DirectoryAndMissingFileRefused) {
  TempDir dir;
  auto in = InputFile::Open(dir.path());
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(test::StatusIs(in.status(), Status::Code::kInvalidArgument, "is a directory"));
  in = InputFile::Open(dir.Join("missing"));
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(test::StatusIs(in.status(), Status::Code::kIoError, "missing"));
  EXPECT_EQ(in.status().errnum(), ENOENT);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

ReadOutcome ReadMessagesFromFd(int fd, const std::string& path, bool* cut) {
  ReadOutcome out;
  FrameReader fr(fd, path);
  for (int guard = 0; guard < 1000; ++guard) {
    kj::Array<capnp::word> words;
    auto r = fr.Next(&words);
    if (!r.ok()) {
      out.error = r.status();
      *cut = fr.cut();
      break;
    }
    if (!*r) break;
    auto bytes = words.asBytes();
    out.messages.emplace_back(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  }
  return out;
}

ReadOutcome ReadMessagesWithCut(const std::string& path, bool* cut) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  ReadOutcome out = ReadMessagesFromFd(fd, path, cut);
  ::close(fd);
  return out;
}

// A message is handed out only once its frame's content checksum has been checked: a
// wrong checksum on the second frame yields the first message and then damage naming the
// offset where the second frame starts, never the second message.
TEST(FrameStream, MessageCountsOnlyAfterItsChecksum) {
  TempDir dir;
  Written w = WriteMessages(dir.Join("full"), {"/first", "/second", "/third"});
  const std::string bad = dir.Join("bad");
  for (int k = 1; k <= 4; ++k) {
    SCOPED_TRACE("checksum byte " + std::to_string(k));
    std::string f = w.file;
    f[w.ends[1] - k] = char(f[w.ends[1] - k] ^ 0x01);  // the last 4 bytes: the checksum
    test::WriteFile(bad, f);
    bool cut = true;
    ReadOutcome r = ReadMessagesWithCut(bad, &cut);
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(r.messages[0], w.messages[0]);
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "damaged"));
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "at byte " + std::to_string(w.ends[0])));
    EXPECT_FALSE(cut);
  }
  // Through a pipe whose writer pauses just before the second frame's checksum, so the
  // frame's data is decoded before its checksum arrives.
  std::string f = w.file;
  f[w.ends[1] - 1] = char(f[w.ends[1] - 1] ^ 0x01);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::thread writer([&] {
    const size_t pause = w.ends[1] - 4;
    EXPECT_EQ(::write(p[1], f.data(), pause), ssize_t(pause));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(::write(p[1], f.data() + pause, f.size() - pause), ssize_t(f.size() - pause));
    ::close(p[1]);
  });
  bool cut = true;
  ReadOutcome r = ReadMessagesFromFd(p[0], "pipe", &cut);
  writer.join();
  ::close(p[0]);
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "damaged"));
  EXPECT_FALSE(cut);
}

// A file that ends inside a frame is a cut, told apart from damage, and names where the
// incomplete frame starts.
TEST(FrameStream, CutToldFromDamage) {
  TempDir dir;
  Written w = WriteMessages(dir.Join("full"), {"/first", "/second", "/third"});
  const std::string f = dir.Join("f");
  for (uint64_t len = w.ends[1] + 1; len < w.ends[2]; ++len) {
    SCOPED_TRACE("cut at " + std::to_string(len));
    test::WriteFile(f, w.file.substr(0, len));
    bool cut = false;
    ReadOutcome r = ReadMessagesWithCut(f, &cut);
    EXPECT_EQ(r.messages.size(), 2u);
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "truncated"));
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "byte " + std::to_string(w.ends[1])));
    EXPECT_TRUE(cut);
  }
  // Damage anywhere in the middle frame: never its message, and damage rather than a
  // cut, except where a damaged size field makes the frame seem to run past the end of
  // the file (indistinguishable from a cut; that frame is not used either way).
  int damaged = 0, cuts = 0;
  for (uint64_t pos = w.ends[0]; pos < w.ends[1]; ++pos) {
    std::string d = w.file;
    d[pos] = char(d[pos] ^ 0x10);
    test::WriteFile(f, d);
    bool cut = true;
    ReadOutcome r = ReadMessagesWithCut(f, &cut);
    if (r.error.ok()) continue;  // a bit zstd does not use
    SCOPED_TRACE("flip at " + std::to_string(pos) + ": " + r.error.message());
    EXPECT_LE(r.messages.size(), 1u);
    EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "byte " + std::to_string(w.ends[0])));
    (cut ? cuts : damaged)++;
  }
  EXPECT_GT(damaged, 4 * cuts) << damaged << " damaged, " << cuts << " taken for cuts";
}

// A message whose length runs past the end of its frame is damage, not a read into the
// next frame.
TEST(FrameStream, MessageMustFitItsFrame) {
  TempDir dir;
  const std::string path = dir.Join("x");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  {
    ZstdWriter w(fd, path);
    const uint32_t head[2] = {0, 2};  // one segment of two words, but only one in this frame
    const uint64_t word = 7;
    ASSERT_OK(w.Write(head, sizeof head));
    ASSERT_OK(w.Write(&word, sizeof word));
    ASSERT_OK(w.EndFrame());
    ASSERT_OK(w.Write(&word, sizeof word));
    ASSERT_OK(w.EndFrame());
  }
  ::close(fd);
  bool cut = true;
  ReadOutcome r = ReadMessagesWithCut(path, &cut);
  EXPECT_TRUE(r.messages.empty());
  EXPECT_TRUE(test::StatusIs(r.error, Status::Code::kCorrupt, "damaged"));
  EXPECT_FALSE(cut);
}

// Frames written behind come out whole and in order; Wait returns once they are written.
TEST(FrameWriterTest, FramesWrittenBehindKeepTheirOrder) {
  TempDir dir;
  const std::string path = dir.Join("behind");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  std::vector<std::string> sent;
  {
    FrameWriter w(fd, "behind", /*behind=*/true);
    for (uint64_t i = 0; i < 50; ++i) {
      capnp::MallocMessageBuilder msg;
      sent.push_back(MakeMessage(msg, "/f" + std::to_string(i), i));
      ASSERT_TRUE(w.Write(msg).ok());
    }
    ASSERT_TRUE(w.Wait().ok());
    EXPECT_GT(w.bytes_out(), 0u);
  }
  ::close(fd);
  fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  FrameReader r(fd, "behind");
  for (const auto& want : sent) {
    kj::Array<capnp::word> words;
    auto next = r.Next(&words);
    ASSERT_TRUE(next.ok()) << next.status().message();
    ASSERT_TRUE(*next);
    auto bytes = words.asBytes();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size()), want);
  }
  kj::Array<capnp::word> words;
  auto end = r.Next(&words);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  ::close(fd);
}

// A frame that fails to be written behind fails Wait, and every write after it.
TEST(FrameWriterTest, AnErrorBehindIsReportedAndSticks) {
  TempDir dir;
  const std::string path = dir.Join("ro");
  test::WriteFile(path, "");
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  FrameWriter w(fd, "ro", /*behind=*/true);
  capnp::MallocMessageBuilder msg;
  MakeMessage(msg, "/a", 1);
  EXPECT_TRUE(w.Write(msg).ok());  // handed to the thread
  Status waited = w.Wait();
  EXPECT_FALSE(waited.ok());
  EXPECT_NE(waited.message().find("ro"), std::string::npos) << waited.message();
  EXPECT_FALSE(w.Write(msg).ok());
  EXPECT_FALSE(w.Wait().ok());
  ::close(fd);
}

}  // namespace
}  // namespace oans
