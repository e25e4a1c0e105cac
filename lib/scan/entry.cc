#include "lib/scan/entry.h"

#include <sys/stat.h>


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

// Directories that could not be read are recorded as errors too, so they are counted.
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
