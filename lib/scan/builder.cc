#include "lib/scan/builder.h"

#include <sys/stat.h>

#include "lib/scan/entry.h"
#include "lib/scan/hasher.h"

namespace oans {
namespace {

// e's keys from hashes of its data.
void SetDataKeys(FileHashes&& h, FileEntry* e) {
  e->hash = h.whole;
  e->block_hashes = std::move(h.blocks);
  e->sector_sums = std::move(h.sector_sums);
  e->sum_kind = e->sector_sums.empty() ? 0 : uint8_t(SumKind::kCrc32c);
  e->key_kind = 0;
  e->hashed = true;
}

// The keys (and sector sums) of `from`, a record of the same data.
void TakeKeys(const FileEntry& from, FileEntry* e) {
  e->hash = from.hash;
  e->block_hashes = from.block_hashes;
  e->sum_kind = from.sum_kind;
  e->key_kind = from.key_kind;
  e->sector_sums = from.sector_sums;
  e->hashed = e->reused = true;
}

// Whether the file kept its size, mtime and ctime while it was read.
bool Unchanged(Sys& sys, int fd, FileEntry* e) {
  auto after = sys.Fstat(fd);
  if (!after.ok()) return FailEntry(e, after.status()), false;
  if (after->size != e->size || after->mtime_ns != e->mtime_ns || after->ctime_ns != e->ctime_ns)
    return FailEntry(e, Status::Mismatch("changed while being read")), false;
  return true;
}

// The open file's identity now, checked against the source's; its map unless `mapped`.
// False when e is complete (with an error).
bool Refresh(Sys& sys, const FileAt& at, FileEntry* e) {
  auto st = sys.Fstat(at.fd);
  if (!st.ok()) return FailEntry(e, st.status()), false;
  if (st->dev != e->dev || st->ino != e->ino || !S_ISREG(st->mode))
    return FailEntry(e, Status::Mismatch("replaced by another file since the walk")), false;
  e->size = st->size;
  e->mtime_ns = st->mtime_ns;
  e->ctime_ns = st->ctime_ns;
  e->nlink = st->nlink;
  e->uid = st->uid;
  e->gid = st->gid;
  if (!at.mapped) {
    e->inode_flags = sys.InodeFlags(at.fd);
    std::vector<FiemapExtent> ext;
    if (sys.Fiemap(at.fd, &ext).ok()) e->extents = std::move(ext);  // no map is not fatal: nothing is shared then
  }
  if (e->size == 0) return FailEntry(e, Status::Mismatch("became empty since the walk")), false;
  return true;
}

// The reading buffer of this thread (256 KiB once used).
thread_local std::vector<char> buffer;

void DropShared(FileEntry* e) {
  for (auto& x : e->extents) x.flags &= ~kExtentShared;
}

}  // namespace

Built RecordBuilder::Build(const FileAt& at, FileEntry* e) const {
  Built b = Built::kDone;
  if (at.fd >= 0 && !at.reuse_only && !Refresh(sys_, at, e)) b = Built::kDone;
  else if (Reuse(at, e)) b = Built::kDone;
  else if (at.reuse_only) b = Built::kOpenIt;
  else b = at.fd >= 0 ? FromOpen(at, e) : FromItems(at, e);
  if (b == Built::kDone && at.btrfs) DropShared(e);
  return b;
}

void RecordBuilder::MapOnly(const FileAt& at, FileEntry* e) const {
  if (Refresh(sys_, at, e)) e->size_paired = true;
}

// Step 1.
bool RecordBuilder::Reuse(const FileAt& at, FileEntry* e) const {
  if (at.same_data) return TakeKeys(*at.same_data, e), true;
  if (at.fd < 0 && !at.mapped) return prev_.Reuse(at.fs_key, e, true, at.extents_unchanged);
  if (at.reuse_only && !at.mapped) return false;
  return prev_.Reuse(at.fs_key, e);
}

// Steps 2 and 3 for a file not opened: nothing is read.
Built RecordBuilder::FromItems(const FileAt& at, FileEntry* e) const {
  if (!at.inline_data.empty()) {
    SetDataKeys(HashMemory(at.inline_data.data(), at.inline_data.size(), o_.block_size), e);
    checksums_->CountInline(at.inline_data.size());
    return Built::kDone;
  }
  if (!at.mapped || at.dirfd < 0 || !checksums_) return Built::kOpenIt;
  auto done = checksums_->FillUnopened(at.dirfd, at.fs_key, o_.block_size, o_.stop, e);
  return done.ok() && *done ? Built::kDone : Built::kOpenIt;
}

// Steps 3 and 4 for an open file.
Built RecordBuilder::FromOpen(const FileAt& at, FileEntry* e) const {
  if (!checksums_) return Read(at, e, ReadWhy::kNotBtrfs);
  ReadWhy why = ReadWhy::kNotBtrfs;
  auto done = checksums_->Fill(at.fd, at.fs_key, {o_.block_size, &buffer, bytes_read_, o_.stop}, e, &why);
  if (done.status().code() == Status::Code::kInterrupted) return Built::kStopped;
  if (!done.ok()) return FailEntry(e, done.status()), Built::kDone;
  if (*done) return Unchanged(sys_, at.fd, e), Built::kDone;
  return Read(at, e, why);
}

// Step 4.
Built RecordBuilder::Read(const FileAt& at, FileEntry* e, ReadWhy why) const {
  auto h = HashFile(sys_, at.fd, e->size, {o_.block_size, &buffer, bytes_read_, o_.stop});
  if (at.drop_pages) sys_.DontNeed(at.fd, 0, e->size);
  if (h.status().code() == Status::Code::kInterrupted) return Built::kStopped;  // left for the next scan
  if (!h.ok()) return FailEntry(e, h.status()), Built::kDone;
  if (checksums_) checksums_->CountRead(why, h->bytes_read);
  if (!Unchanged(sys_, at.fd, e)) return Built::kDone;
  SetDataKeys(std::move(*h), e);
  return Built::kDone;
}

}  // namespace oans
