// IndexWriter: copying frames written elsewhere (a spool of the same scan, or a batch of
// a previous index carried verbatim) into the index, counted; an index's header alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "lib/format/index_file.h"

namespace oans {

namespace {

Status WriteAll(int fd, const char* p, size_t n, const std::string& name) {
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Status::Io("writing " + name, errno);
    done += size_t(w);
  }
  return Status::Ok();
}

// Bytes [start, end) of `from` appended to `to` at its offset: in the kernel where it can
// (copy_file_range), else through a buffer (a pipe, another kind of filesystem).
Status CopyRange(int from, uint64_t start, uint64_t end, int to, const std::string& name) {
  uint64_t at = start;
  while (at < end) {
    loff_t in = loff_t(at);
    ssize_t n = copy_file_range(from, &in, to, nullptr, size_t(std::min<uint64_t>(end - at, 1u << 30)), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF))
      break;  // not here: through a buffer
    if (n < 0) return Status::Io("writing " + name, errno);
    if (n == 0) return Status::Io("reading frames to copy: the file is shorter than they are", EIO);
    at += uint64_t(n);
  }
  std::vector<char> buf(size_t(std::min<uint64_t>(end - at, 1u << 20)));
  while (at < end) {
    const size_t want = size_t(std::min<uint64_t>(buf.size(), end - at));
    ssize_t r = pread(from, buf.data(), want, off_t(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Io("reading frames to copy", r < 0 ? errno : EIO);
    OANS_RETURN_IF_ERROR(WriteAll(to, buf.data(), size_t(r), name));
    at += uint64_t(r);
  }
  return Status::Ok();
}

void Count(const IndexTotals& c, IndexTotals* t) {
  t->records += c.records;
  t->batches += c.batches;
  t->errors += c.errors;
  t->bytes += c.bytes;
  t->dirs += c.dirs;
}

}  // namespace

Status IndexWriter::Flush() {
  OANS_RETURN_IF_ERROR(FlushBatch());
  OANS_RETURN_IF_ERROR(FlushCopy());
  return frames_.Wait();
}

Status IndexWriter::AppendFrames(const TempFile& spool, const IndexTotals& spooled) {
  OANS_RETURN_IF_ERROR(FlushBatch());
  OANS_RETURN_IF_ERROR(FlushCopy());
  OANS_RETURN_IF_ERROR(frames_.Wait());
  struct stat st;
  if (fstat(spool.fd(), &st) != 0) return Status::Io("reading the scan's temporary spool", errno);
  OANS_RETURN_IF_ERROR(CopyRange(spool.fd(), 0, uint64_t(st.st_size), fd_, name_));
  Count(spooled, &totals_);
  return Status::Ok();
}

IndexWriter::~IndexWriter() {
  if (copy_fd_ >= 0) close(copy_fd_);
}

Status IndexWriter::AppendFrame(const FrameSpan& span, const IndexTotals& counted) {
  OANS_RETURN_IF_ERROR(FlushBatch());
  if (span.end < span.start) return Status::Invalid("a frame to copy ends before it starts");
  struct stat st;
  if (fstat(span.fd, &st) != 0) return Status::Io("reading a frame to copy", errno);
  if (copy_fd_ >= 0 && copy_dev_ == uint64_t(st.st_dev) && copy_ino_ == uint64_t(st.st_ino) &&
      copy_end_ == span.start) {
    copy_end_ = span.end;
  } else {
    OANS_RETURN_IF_ERROR(FlushCopy());
    copy_fd_ = fcntl(span.fd, F_DUPFD_CLOEXEC, 0);
    if (copy_fd_ < 0) return Status::Io("reading a frame to copy", errno);
    copy_dev_ = uint64_t(st.st_dev);
    copy_ino_ = uint64_t(st.st_ino);
    copy_start_ = span.start;
    copy_end_ = span.end;
  }
  Count(counted, &totals_);
  return Status::Ok();
}

Status IndexWriter::FlushCopy() {
  if (copy_fd_ < 0) return Status::Ok();
  OANS_RETURN_IF_ERROR(frames_.Wait());  // the frames written before come first
  Status s = CopyRange(copy_fd_, copy_start_, copy_end_, fd_, name_);
  close(copy_fd_);
  copy_fd_ = -1;
  return s;
}

Result<IndexHeader> ReadIndexHeader(const std::string& path) {
  IndexHeader header;
  bool seen = false;
  IndexReadOptions ro;
  ro.allow_truncated = true;
  auto r = ReadIndex(
      path, ro,
      [&](const IndexHeader& h) {
        header = h;
        seen = true;
        return Status::Interrupted("the header is read");
      },
      [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
  if (seen) return header;
  if (!r.ok()) return r.status();
  return Status::Corrupt(path + " is not an oans index (no header)");
}

}  // namespace oans
