#include "lib/spill.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace oans {

std::string TempDirectory(const std::string& preferred) {
  if (!preferred.empty()) return preferred;
  const char* t = std::getenv("TMPDIR");
  if (t && *t) return t;
  return "/var/tmp";
}

Result<std::unique_ptr<TempFile>> TempFile::Create(const std::string& dir) {
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // No O_TMPFILE on this filesystem: a named file, unlinked at once.
    std::string tmpl = dir + "/oans-spill-XXXXXX";
    fd = mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd >= 0) unlink(tmpl.c_str());
  }
  if (fd < 0)
    return Status::Io("creating a temporary file in " + dir + " (set --temp-dir or TMPDIR to a writable directory)",
                      errno);
  return std::unique_ptr<TempFile>(new TempFile(fd, dir));
}

TempFile::~TempFile() { close(fd_); }

Result<uint64_t> TempFile::Append(const void* data, size_t n) {
  const uint64_t at = size_;
  const char* p = static_cast<const char*>(data);
  size_t left = n;
  while (left > 0) {
    ssize_t w = pwrite(fd_, p, left, off_t(size_));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Io("writing a temporary file in " + dir_ + " (is it full? set --temp-dir or TMPDIR)", errno);
    }
    p += w;
    left -= size_t(w);
    size_ += uint64_t(w);
  }
  return at;
}

Status TempFile::ReadAt(uint64_t offset, void* data, size_t n) const {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = pread(fd_, p, n, off_t(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Io("reading a temporary file in " + dir_, errno);
    }
    if (r == 0) return Status::Corrupt("temporary file in " + dir_ + " is shorter than written");
    p += r;
    n -= size_t(r);
    offset += uint64_t(r);
  }
  return Status::Ok();
}

namespace {
constexpr size_t kWriteBuffer = 1u << 20;
}

Status RecordStore::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  auto r = file_->Append(buffer_.data(), buffer_.size());
  if (!r.ok()) return r.status();
  buffer_.clear();
  return Status::Ok();
}

Result<uint64_t> RecordStore::Add(const std::string& record) {
  const uint64_t at = bytes();
  const uint32_t n = uint32_t(record.size());
  buffer_.append(reinterpret_cast<const char*>(&n), sizeof n);
  buffer_.append(record);
  if (!file_ && buffer_.size() > budget_) {
    auto f = TempFile::Create(dir_);
    if (!f.ok()) return f.status();
    file_ = std::move(*f);
    OANS_RETURN_IF_ERROR(FlushBuffer());
    std::string().swap(buffer_);
  } else if (file_ && buffer_.size() >= kWriteBuffer) {
    OANS_RETURN_IF_ERROR(FlushBuffer());
  }
  return at;
}

Status RecordStore::Get(uint64_t offset, std::string* record) const {
  const uint64_t on_file = file_ ? file_->size() : 0;
  uint32_t n = 0;
  if (offset >= on_file) {
    const uint64_t at = offset - on_file;
    if (at + sizeof n > buffer_.size()) return Status::Corrupt("record store: offset out of range");
    std::memcpy(&n, buffer_.data() + at, sizeof n);
    if (at + sizeof n + n > buffer_.size()) return Status::Corrupt("record store: record out of range");
    record->assign(buffer_.data() + at + sizeof n, n);
    return Status::Ok();
  }
  // On file: one read that usually holds the whole record.
  char head[512];
  size_t want = size_t(std::min<uint64_t>(sizeof head, on_file - offset));
  if (want < sizeof n) return Status::Corrupt("record store: record out of range");
  OANS_RETURN_IF_ERROR(file_->ReadAt(offset, head, want));
  std::memcpy(&n, head, sizeof n);
  if (offset + sizeof n + n > on_file) return Status::Corrupt("record store: record out of range");
  if (sizeof n + n <= want) {
    record->assign(head + sizeof n, n);
    return Status::Ok();
  }
  record->resize(n);
  return file_->ReadAt(offset + sizeof n, record->data(), n);
}

}  // namespace oans
