#include "lib/format/frame_stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <capnp/serialize.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <vector>

namespace oans {

namespace {

const char kTempInfix[] = ".oans-tmp-";

void SplitPath(const std::string& path, std::string* dir, std::string* base) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *base = path;
  } else {
    *dir = slash == 0 ? "/" : path.substr(0, slash);
    *base = path.substr(slash + 1);
  }
}

std::string RandomSuffix() {
  std::random_device rd;
  return std::to_string(::getpid()) + "-" + std::to_string(rd() & 0xffffff);
}

}  // namespace

OutputFile::~OutputFile() {
  if (!tmp_.empty() && !committed_) ::unlinkat(dirfd_, tmp_.c_str(), 0);
  if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
  if (dirfd_ >= 0) ::close(dirfd_);
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
  std::string dir;
  SplitPath(path, &dir, &out->base_);
  if (out->base_.empty() || out->base_ == "." || out->base_ == "..")
    return Status::Invalid(path + " is a directory; give a file name");
  out->dirfd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out->dirfd_ < 0) return Status::Io("creating " + path + " (opening its directory)", errno);
  struct stat st;
  if (::fstatat(out->dirfd_, out->base_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return Status::Io("checking " + path, errno);
  } else if (S_ISLNK(st.st_mode)) {
    return Status::Invalid(path + " is a symbolic link; outputs are never written through one (it could point "
                                  "at a device or another file): remove it or give the real path");
  } else if (S_ISDIR(st.st_mode)) {
    return Status::Invalid(path + " is a directory; give a file name");
  } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    OANS_RETURN_IF_ERROR(out->OpenInPlace());
    return out;
  } else if (!S_ISREG(st.st_mode)) {
    return Status::Invalid(path + " is " + (S_ISBLK(st.st_mode) ? "a block device" : "not a regular file") +
                           "; outputs go to regular files (replaced whole), character devices such as /dev/null "
                           "or FIFOs: give another name");
  }
  RemoveStaleTemporaries(out->dirfd_, out->base_);
  OANS_RETURN_IF_ERROR(out->OpenTemporary());
  return out;
}

// A character device or FIFO (/dev/null, a named pipe): written in place, nothing to
// rename. The open descriptor must still be one, whatever the name holds by now.
Status OutputFile::OpenInPlace() {
  fd_ = ::openat(dirfd_, base_.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) return Status::Io("opening " + path_, errno);
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::Io("checking " + path_, errno);
  if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
    return Status::Invalid(path_ + " was replaced while being opened; give the output name again");
  if (::isatty(fd_)) return Status::Invalid("refusing to write binary data to a terminal (" + path_ + ")");
  direct_ = true;
  return Status::Ok();
}

Status OutputFile::OpenTemporary() {
  fd_ = ::openat(dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd_ >= 0) {
    unnamed_ = true;
    return Status::Ok();
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return Status::Io("creating " + path_, errno);
  // No O_TMPFILE here: a named temporary file that the next run removes if we are killed.
  tmp_ = "." + base_ + kTempInfix + RandomSuffix();
  fd_ = ::openat(dirfd_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    int e = errno;
    tmp_.clear();
    return Status::Io("creating " + path_, e);
  }
  return Status::Ok();
}

void OutputFile::RemoveStaleTemporaries(int dirfd, const std::string& target) {
  const std::string prefix = "." + target + kTempInfix;
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  std::vector<std::string> stale;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    struct stat st;
    if (pid <= 0 || ::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // its writer may be running
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == ::geteuid())
      stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale) ::unlinkat(dirfd, name.c_str(), 0);
}

// Gives the unnamed file the target's name: linked straight there when the name is free,
// else under a temporary name renamed over the target (atomic).
Status OutputFile::LinkIntoPlace() {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  auto link = [&](const std::string& name) {
    if (::linkat(AT_FDCWD, proc.c_str(), dirfd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno == EEXIST) return EEXIST;
    // Without /proc mounted, root can link the descriptor itself.
    if (::linkat(fd_, "", dirfd_, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
    return errno;
  };
  int e = link(base_);
  if (e == 0) return Status::Ok();
  if (e != EEXIST) return Status::Io("linking " + path_ + " into place", e);
  tmp_ = "." + base_ + kTempInfix + RandomSuffix();
  if ((e = link(tmp_)) != 0) {
    tmp_.clear();
    return Status::Io("linking " + path_ + " into place", e);
  }
  if (::renameat(dirfd_, tmp_.c_str(), dirfd_, base_.c_str()) != 0) return Status::Io("renaming into " + path_, errno);
  tmp_.clear();
  return Status::Ok();
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
  if (unnamed_) {
    OANS_RETURN_IF_ERROR(LinkIntoPlace());
  } else if (::renameat(dirfd_, tmp_.c_str(), dirfd_, base_.c_str()) != 0) {
    return Status::Io("renaming into " + path_, errno);
  }
  committed_ = true;
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return Status::Io("writing " + path_, errno);
  ::fsync(dirfd_);  // the new name is durable too (best effort)
  return Status::Ok();
}

namespace {

std::mutex pinned_mu;
std::map<std::string, std::string>& Pinned() {
  static std::map<std::string, std::string> pinned;
  return pinned;
}

// The name a pinned path is known by, or the path itself.
std::string PinnedName(const std::string& path) {
  std::lock_guard<std::mutex> lock(pinned_mu);
  auto it = Pinned().find(path);
  return it == Pinned().end() ? path : it->second;
}

}  // namespace

std::string PinInput(int fd, const std::string& name) {
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::lock_guard<std::mutex> lock(pinned_mu);
  Pinned()[path] = name;
  return path;
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
  const std::string name = PinnedName(path);
  in->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in->fd_ < 0) return Status::Io("opening " + name, errno);
  struct stat st;
  if (::fstat(in->fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(in->fd_);
    in->fd_ = -1;
    return Status::Invalid(name + " is a directory, not an oans file");
  }
  in->owned_ = true;
  in->name_ = name;
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
  return PinInput(fd, "standard input");
}

FrameWriter::~FrameWriter() { (void)Wait(); }

Status FrameWriter::WriteNow(const kj::Array<capnp::word>& words) {
  auto bytes = words.asBytes();
  OANS_RETURN_IF_ERROR(z_.Write(bytes.begin(), bytes.size()));
  return z_.EndFrame();
}

Status FrameWriter::Wait() {
  if (worker_.joinable()) worker_.join();
  in_flight_ = nullptr;
  if (out_of_memory_ && status_.ok()) status_ = Status::Io("writing a frame", ENOMEM);
  return status_;
}

Status FrameWriter::Write(capnp::MessageBuilder& msg) {
  // One flat copy at a time: the frame behind is written before the next is made.
  OANS_RETURN_IF_ERROR(Wait());
  kj::Array<capnp::word> words = capnp::messageToFlatArray(msg);
  if (behind_) {
    in_flight_ = kj::mv(words);
    try {
      worker_ = std::thread([this] {
        try {
          Status s = WriteNow(in_flight_);
          if (!s.ok()) status_ = s;
        } catch (...) {  // out of memory making a message: said by Wait
          out_of_memory_ = true;
        }
        in_flight_ = nullptr;  // its memory goes back while the next batch is gathered
      });
      return Status::Ok();
    } catch (const std::system_error&) {  // no thread to be had: written here
      words = kj::mv(in_flight_);
    }
  }
  status_ = WriteNow(words);
  return status_;
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

Status FrameReader::DamagedAt(uint64_t offset, const std::string& what) const {
  return Status::Corrupt(name_ + " is damaged: the frame at byte " + std::to_string(offset) + " " + what);
}

Result<bool> FrameReader::Next(kj::Array<capnp::word>* words) {
  using Frames = ZstdReader::Frames;
  uint32_t first[2];
  OANS_ASSIGN_OR_RETURN(auto r, z_.ReadExact(first, sizeof first, Frames::kOne));
  if (!r) return false;
  offset_ = z_.frame_offset();
  const uint32_t segments = first[0] + 1;
  if (segments > 512) return Damaged("holds a bad message segment table");
  // Segment table: count, sizes, padding to a whole word.
  const size_t table_words = (segments / 2) + 1;
  std::vector<uint32_t> table(table_words * 2);
  table[0] = first[0];
  table[1] = first[1];
  if (table.size() > 2) {
    OANS_RETURN_IF_ERROR(z_.ReadExact(table.data() + 2, (table.size() - 2) * 4, Frames::kSame).status());
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
      OANS_RETURN_IF_ERROR(z_.ReadExact(words->begin() + table_words, body_words * sizeof(capnp::word), Frames::kSame).status());
    }
  } else {
    std::vector<uint64_t> body;  // words, as plain integers
    const size_t chunk = (16u << 20) / sizeof(uint64_t);
    size_t have = 0;
    while (have < body_words) {
      size_t n = std::min<size_t>(chunk, body_words - have);
      body.resize(have + n);
      OANS_RETURN_IF_ERROR(z_.ReadExact(body.data() + have, n * sizeof(uint64_t), Frames::kSame).status());
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
