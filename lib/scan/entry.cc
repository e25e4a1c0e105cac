#include "lib/scan/entry.h"

#include <sys/stat.h>

#include "lib/scan/hasher.h"

namespace oans {

FileEntry EntryOf(const WalkEntry& w, uint32_t fs) {
  FileEntry e;
  e.path = w.path;
  e.fs = fs;
  e.dev = w.st.dev;
  e.ino = w.st.ino;
  e.size = w.st.size;
  e.mtime_ns = w.st.mtime_ns;
  e.ctime_ns = w.st.ctime_ns;
  e.nlink = w.st.nlink;
  e.uid = w.st.uid;
  e.gid = w.st.gid;
  return e;
}

void CountRecord(const FileEntry& e, ScanStats* stats, Observer* observer) {
  if (e.reused) stats->reused++;
  else if (e.hashed) stats->hashed++;
  if (!e.error.empty()) {
    stats->errors++;
    observer->FileNotice(e.path, e.error);
  }
  stats->files++;
  stats->bytes += e.size;
}

void FailEntry(FileEntry* e, const Status& s) {
  e->error = s.message();
  e->errnum = s.errnum();
  e->hashed = false;
  e->block_hashes.clear();
  e->sector_sums.clear();
  e->sum_kind = e->key_kind = 0;
}

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

// Whether the file kept its size, mtime and ctime while it was read.
bool Unchanged(Sys& sys, int fd, FileEntry* e) {
  auto after = sys.Fstat(fd);
  if (!after.ok()) return FailEntry(e, after.status()), false;
  if (after->size != e->size || after->mtime_ns != e->mtime_ns || after->ctime_ns != e->ctime_ns)
    return FailEntry(e, Status::Mismatch("changed while being read")), false;
  return true;
}

}  // namespace

bool ReadOpen(Sys& sys, int fd, bool mapped, const std::string& fs_key, const PreviousIndex& prev,
              const ScanOptions& o, Checksums* checksums, std::vector<char>* buffer,
              std::atomic<uint64_t>* bytes_read, FileEntry* e) {
  auto st = sys.Fstat(fd);
  if (!st.ok()) return FailEntry(e, st.status()), true;
  if (st->dev != e->dev || st->ino != e->ino || !S_ISREG(st->mode))
    return FailEntry(e, Status::Mismatch("replaced by another file since the walk")), true;
  e->size = st->size;
  e->mtime_ns = st->mtime_ns;
  e->ctime_ns = st->ctime_ns;
  e->nlink = st->nlink;
  e->uid = st->uid;
  e->gid = st->gid;
  if (!mapped) {
    e->inode_flags = sys.InodeFlags(fd);
    std::vector<FiemapExtent> ext;
    if (sys.Fiemap(fd, &ext).ok()) e->extents = std::move(ext);  // no map is not fatal: nothing is shared then
  }
  if (e->size == 0) return FailEntry(e, Status::Mismatch("became empty since the walk")), true;
  if (prev.Reuse(fs_key, e)) return true;
  ReadWhy why = ReadWhy::kNotBtrfs;
  if (checksums) {
    auto done = checksums->Fill(fd, fs_key, o.block_size, buffer, bytes_read, o.stop, e, &why);
    if (done.status().code() == Status::Code::kInterrupted) return false;
    if (!done.ok()) return FailEntry(e, done.status()), true;
    if (*done) return Unchanged(sys, fd, e), true;
  }
  auto h = HashFile(sys, fd, e->size, o.block_size, buffer,
                    [](void* ctx, uint64_t n) { static_cast<std::atomic<uint64_t>*>(ctx)->fetch_add(n); },
                    bytes_read, o.stop);
  if (h.status().code() == Status::Code::kInterrupted) return false;  // left for the next scan
  if (!h.ok()) return FailEntry(e, h.status()), true;
  if (checksums) checksums->CountRead(why, h->bytes_read);
  if (!Unchanged(sys, fd, e)) return true;
  SetDataKeys(std::move(*h), e);
  return true;
}

bool FillFromTree(int dirfd, const std::string& fs_key, TreeMap&& map, const PreviousIndex& prev,
                  const ScanOptions& o, Checksums* checksums, FileEntry* e) {
  e->extents = std::move(map.extents);
  e->inode_flags = map.inode_flags;
  if (prev.Reuse(fs_key, e)) return true;
  if (!map.inline_data.empty()) {
    SetDataKeys(HashMemory(map.inline_data.data(), map.inline_data.size(), o.block_size), e);
    checksums->CountInline(map.inline_data.size());
    return true;
  }
  auto done = checksums->FillUnopened(dirfd, fs_key, o.block_size, o.stop, e);
  return done.ok() && *done;
}

Status RecordProblems(const WalkResult& w, const ScanOptions& o, IndexWriter* writer, Observer* observer,
                      ScanStats* stats) {
  for (auto& p : w.problems) {
    if (o.stop && o.stop->load()) break;
    FileEntry e;
    e.path = p.path;
    e.error = p.status.message();
    e.errnum = p.status.errnum();
    stats->errors++;
    stats->files++;
    observer->FileNotice(p.path, p.status.message());
    OANS_RETURN_IF_ERROR(writer->Add(std::move(e)));
  }
  return Status::Ok();
}

}  // namespace oans
