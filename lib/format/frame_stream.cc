#include "lib/format/frame_stream.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <capnp/serialize.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

namespace oans {

OutputFile::~OutputFile() {
  if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
  if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
}

Result<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path) {
  std::unique_ptr<OutputFile> out(new OutputFile());
  if (path == "-" || path.empty()) {
    if (::isatty(STDOUT_FILENO))
      return Status::Invalid("refusing to write binary data to a terminal; redirect standard output "
                             "to a file or a pipe, or use -o FILE");
    out->fd_ = STDOUT_FILENO;
    out->name_ = "standard output";
    return out;
  }
  out->path_ = path;
  out->name_ = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or a FIFO (/dev/null, a named pipe): written in place, nothing to rename.
    if (S_ISDIR(st.st_mode)) return Status::Invalid(path + " is a directory; give a file name");
    out->fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (out->fd_ < 0) return Status::Io("opening " + path, errno);
    if (::isatty(out->fd_)) {
      ::close(out->fd_);
      out->fd_ = -1;
      return Status::Invalid("refusing to write binary data to a terminal (" + path + ")");
    }
    out->direct_ = true;
    return out;
  }
  std::random_device rd;
  out->tmp_ = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd() & 0xffffff);
  out->fd_ = ::open(out->tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out->fd_ < 0) {
    int e = errno;
    out->tmp_.clear();
    return Status::Io("creating " + path, e);
  }
  return out;
}

Status OutputFile::Commit() {
  if (fd_ == STDOUT_FILENO) return Status::Ok();
  if (direct_) {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Status::Io("writing " + path_, errno);
    committed_ = true;
    return Status::Ok();
  }
  if (::fsync(fd_) != 0) return Status::Io("writing " + path_, errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::Io("writing " + path_, errno);
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return Status::Io("renaming into " + path_, errno);
  committed_ = true;
  return Status::Ok();
}

InputFile::~InputFile() {
  if (owned_ && fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<InputFile>> InputFile::Open(const std::string& path) {
  std::unique_ptr<InputFile> in(new InputFile());
  if (path == "-") {
    if (::isatty(STDIN_FILENO))
      return Status::Invalid("standard input is a terminal; give a file name or pipe data in");
    in->fd_ = STDIN_FILENO;
    in->name_ = "standard input";
    return in;
  }
  in->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in->fd_ < 0) return Status::Io("opening " + path, errno);
  struct stat st;
  if (::fstat(in->fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(in->fd_);
    in->fd_ = -1;
    return Status::Invalid(path + " is a directory, not an oans file");
  }
  in->owned_ = true;
  in->name_ = path;
  return in;
}

Result<std::string> SpoolStdin() {
  int fd = ::memfd_create("oans-stdin", MFD_CLOEXEC);
  if (fd < 0) return Status::Io("buffering standard input", errno);
  std::vector<char> buf(1 << 16);
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io("reading standard input", errno);
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(fd, buf.data() + off, size_t(n - off));
      if (w < 0) return Status::Io("buffering standard input", errno);
      off += w;
    }
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

Status FrameWriter::Write(capnp::MessageBuilder& msg) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(msg);
  auto bytes = words.asBytes();
  OANS_RETURN_IF_ERROR(z_.Write(bytes.begin(), bytes.size()));
  return z_.EndFrame();
}

capnp::ReaderOptions FrameReader::Options(size_t words) {
  capnp::ReaderOptions o;
  // Each word may be visited a few times by legitimate readers; more means a loop.
  o.traversalLimitInWords = words * 4 + 1024;
  o.nestingLimit = 32;
  return o;
}

Status FrameReader::Damaged(const std::string& what) const {
  return Status::Corrupt(name_ + " is damaged: the frame at byte " + std::to_string(z_.frame_offset()) + " " + what);
}

Result<bool> FrameReader::Next(kj::Array<capnp::word>* words) {
  using Frames = ZstdReader::Frames;
  uint32_t first[2];
  auto r = z_.ReadExact(first, sizeof first, Frames::kOne);
  if (!r.ok()) return r.status();
  if (!*r) return false;
  offset_ = z_.frame_offset();
  const uint32_t segments = first[0] + 1;
  if (segments > 512) return Damaged("holds a bad message segment table");
  // Segment table: count, sizes, padding to a whole word.
  const size_t table_words = (segments / 2) + 1;
  std::vector<uint32_t> table(table_words * 2);
  table[0] = first[0];
  table[1] = first[1];
  if (table.size() > 2) {
    auto t = z_.ReadExact(table.data() + 2, (table.size() - 2) * 4, Frames::kSame);
    if (!t.ok()) return t.status();
  }
  uint64_t body_words = 0;
  for (uint32_t i = 0; i < segments; ++i) body_words += table[1 + i];
  if (body_words * 8 > kMaxMessageBytes)
    return Damaged("holds a message that claims " + std::to_string(body_words * 8) +
                   " bytes, more than the 1 GiB limit");
  // Messages up to 64 MiB (every batch and round oans writes) are read straight into
  // their array. Larger ones are read in chunks, so the allocation grows only with data
  // actually present.
  constexpr uint64_t kDirectWords = (64u << 20) / sizeof(capnp::word);
  if (body_words <= kDirectWords) {
    *words = kj::heapArray<capnp::word>(table_words + body_words);
    std::memcpy(static_cast<void*>(words->begin()), table.data(), table_words * sizeof(capnp::word));
    if (body_words) {
      auto b = z_.ReadExact(words->begin() + table_words, body_words * sizeof(capnp::word), Frames::kSame);
      if (!b.ok()) return b.status();
    }
  } else {
    std::vector<uint64_t> body;  // words, as plain integers
    const size_t chunk = (16u << 20) / sizeof(uint64_t);
    size_t have = 0;
    while (have < body_words) {
      size_t n = std::min<size_t>(chunk, body_words - have);
      body.resize(have + n);
      auto b = z_.ReadExact(body.data() + have, n * sizeof(uint64_t), Frames::kSame);
      if (!b.ok()) return b.status();
      have += n;
    }
    *words = kj::heapArray<capnp::word>(table_words + body_words);
    std::memcpy(static_cast<void*>(words->begin()), table.data(), table_words * sizeof(capnp::word));
    std::memcpy(static_cast<void*>(words->begin() + table_words), body.data(), body_words * sizeof(capnp::word));
  }
  // The message counts only once its frame's content checksum has been checked.
  OANS_RETURN_IF_ERROR(z_.FinishFrame());
  return true;
}

}  // namespace oans
