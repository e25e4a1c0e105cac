// IndexWriter: copying frames written elsewhere (a spool of the same scan, or a batch of
// a previous index carried verbatim) into the index, counted; an index's header alone.
#include <sys/stat.h>
#include <unistd.h>

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

void Count(const IndexTotals& c, IndexTotals* t) {
  t->records += c.records;
  t->batches += c.batches;
  t->errors += c.errors;
  t->bytes += c.bytes;
  t->dirs += c.dirs;
}

}  // namespace

Status IndexWriter::AppendFrames(const TempFile& spool, const IndexTotals& spooled) {
  OANS_RETURN_IF_ERROR(FlushBatch());
  struct stat st;
  if (fstat(spool.fd(), &st) != 0) return Status::Io("reading the scan's temporary spool", errno);
  std::vector<char> buf(1u << 20);
  for (uint64_t at = 0; at < uint64_t(st.st_size);) {
    size_t want = size_t(std::min<uint64_t>(buf.size(), uint64_t(st.st_size) - at));
    OANS_RETURN_IF_ERROR(spool.ReadAt(at, buf.data(), want));
    OANS_RETURN_IF_ERROR(WriteAll(fd_, buf.data(), want, name_));
    at += want;
  }
  Count(spooled, &totals_);
  return Status::Ok();
}

Status IndexWriter::AppendFrame(const FrameSpan& span, const IndexTotals& counted) {
  OANS_RETURN_IF_ERROR(FlushBatch());
  std::vector<char> buf(size_t(span.end - span.start));
  for (size_t done = 0; done < buf.size();) {
    ssize_t r = pread(span.fd, buf.data() + done, buf.size() - done, off_t(span.start + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Io("reading a frame to copy", r < 0 ? errno : EIO);
    done += size_t(r);
  }
  OANS_RETURN_IF_ERROR(WriteAll(fd_, buf.data(), buf.size(), name_));
  Count(counted, &totals_);
  return Status::Ok();
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
