#include "lib/base/spill.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <new>

namespace oans {

std::string TempDirectory(const std::string& preferred) {
  if (!preferred.empty()) return preferred;
  const char* t = std::getenv("TMPDIR");
  if (t && *t) return t;
  return "/var/tmp";
}

void* MapChunk(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void UnmapChunk(void* p, size_t bytes) {
  if (p) munmap(p, bytes);
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

void RecordStore::Append(const char* p, size_t n) {
  while (n > 0) {
    const uint64_t in_mem = end_ - mem_base_;
    const size_t pos = size_t(in_mem % kChunk);
    if (pos == 0 && in_mem / kChunk == chunks_.size()) chunks_.emplace_back(new char[kChunk]);
    const size_t take = std::min(n, kChunk - pos);
    std::memcpy(chunks_[size_t(in_mem / kChunk)].get() + pos, p, take);
    p += take;
    n -= take;
    end_ += take;
  }
}

// Moves every full chunk to the file; the chunk being filled stays.
Status RecordStore::Spill() {
  if (!file_) {
    OANS_ASSIGN_OR_RETURN(file_, TempFile::Create(dir_));
  }
  const size_t full = size_t((end_ - mem_base_) / kChunk);
  for (size_t i = 0; i < full; ++i) {
    OANS_RETURN_IF_ERROR(file_->Append(chunks_[i].get(), kChunk).status());
  }
  chunks_.erase(chunks_.begin(), chunks_.begin() + long(full));
  mem_base_ += uint64_t(full) * kChunk;
  return Status::Ok();
}

Result<uint64_t> RecordStore::Add(const std::string& record) {
  const uint64_t at = end_;
  if (record.size() > UINT32_MAX) return Status::Invalid("record store: a record of more than 4 GiB");
  const uint32_t n = uint32_t(record.size());
  Append(reinterpret_cast<const char*>(&n), sizeof n);
  Append(record.data(), record.size());
  if (end_ - mem_base_ > (file_ ? kChunk : std::max<uint64_t>(budget_, kChunk))) OANS_RETURN_IF_ERROR(Spill());
  return at;
}

Status RecordStore::Read(uint64_t offset, char* p, size_t n) const {
  if (offset + n > end_) return Status::Corrupt("record store: record out of range");
  if (offset < mem_base_) {
    const size_t from_file = size_t(std::min<uint64_t>(n, mem_base_ - offset));
    OANS_RETURN_IF_ERROR(file_->ReadAt(offset, p, from_file));
    p += from_file;
    n -= from_file;
    offset += from_file;
  }
  while (n > 0) {
    const uint64_t in_mem = offset - mem_base_;
    const size_t pos = size_t(in_mem % kChunk);
    const size_t take = std::min(n, kChunk - pos);
    std::memcpy(p, chunks_[size_t(in_mem / kChunk)].get() + pos, take);
    p += take;
    n -= take;
    offset += take;
  }
  return Status::Ok();
}

Status RecordStore::Reader::Have(uint64_t at, size_t n) {
  if (at >= window_at_ && at + n <= window_at_ + window_.size()) return Status::Ok();
  window_.erase(0, size_t(std::min<uint64_t>(window_.size(), at - window_at_)));
  window_at_ = at;
  const uint64_t want_end = std::min<uint64_t>(store_->end_, std::max<uint64_t>(at + n, at + 4 * kChunk));
  const uint64_t from = window_at_ + window_.size();
  if (want_end > from) {
    const size_t old = window_.size();
    window_.resize(old + size_t(want_end - from));
    OANS_RETURN_IF_ERROR(store_->Read(from, window_.data() + old, size_t(want_end - from)));
  }
  return at + n <= window_at_ + window_.size() ? Status::Ok() : Status::Corrupt("record store: record out of range");
}

void RecordStore::Reader::Next() {
  valid_ = false;
  if (!status_.ok() || pos_ >= store_->end_) return;
  uint32_t n = 0;
  status_ = Have(pos_, sizeof n);
  if (!status_.ok()) return;
  std::memcpy(&n, window_.data() + (pos_ - window_at_), sizeof n);
  status_ = Have(pos_, sizeof n + n);
  if (!status_.ok()) return;
  record_.assign(window_, size_t(pos_ - window_at_ + sizeof n), n);
  at_ = pos_;
  pos_ += sizeof n + n;
  valid_ = true;
}

Status RecordStore::ForEach(const std::function<Status(uint64_t, const std::string&)>& visit) const {
  Reader r = Records();
  for (; r.Valid(); r.Next()) OANS_RETURN_IF_ERROR(visit(r.offset(), r.key()));
  return r.status();
}

Status RecordStore::GetAfter(uint64_t offset, uint32_t skip, std::string* record) const {
  // Short records: one small window usually holds them all.
  char window[1024];
  uint64_t window_at = offset, window_end = offset;
  for (uint32_t i = 0;; ++i) {
    if (offset + 4 > window_end) {
      if (offset + 4 > end_) return Status::Corrupt("record store: offset out of range");
      window_at = offset;
      window_end = std::min<uint64_t>(end_, offset + sizeof window);
      OANS_RETURN_IF_ERROR(Read(window_at, window, size_t(window_end - window_at)));
    }
    uint32_t n = 0;
    std::memcpy(&n, window + (offset - window_at), sizeof n);
    if (i == skip) {
      if (offset + sizeof n + n > window_end) break;  // longer than the window: read it whole
      record->assign(window + (offset - window_at) + sizeof n, n);
      return Status::Ok();
    }
    offset += sizeof n + n;
  }
  return Get(offset, record);
}

Status RecordStore::Get(uint64_t offset, std::string* record) const {
  uint32_t n = 0;
  if (offset + sizeof n > end_) return Status::Corrupt("record store: offset out of range");
  if (offset + sizeof n <= mem_base_ && mem_base_ - offset >= 512) {
    // On file: one read that usually holds the whole record.
    char head[512];
    OANS_RETURN_IF_ERROR(file_->ReadAt(offset, head, sizeof head));
    std::memcpy(&n, head, sizeof n);
    if (offset + sizeof n + n > end_) return Status::Corrupt("record store: record out of range");
    if (sizeof n + n <= sizeof head) {
      record->assign(head + sizeof n, n);
      return Status::Ok();
    }
    // Longer: keep what the first read gave and read only the rest.
    const size_t have = sizeof head - sizeof n;
    record->resize(n);
    std::memcpy(record->data(), head + sizeof n, have);
    return Read(offset + sizeof head, record->data() + have, n - have);
  } else {
    OANS_RETURN_IF_ERROR(Read(offset, reinterpret_cast<char*>(&n), sizeof n));
  }
  record->resize(n);
  return Read(offset + sizeof n, record->data(), n);
}

}  // namespace oans
