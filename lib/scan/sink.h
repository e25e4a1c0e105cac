// Where records finished during the walk go: unnamed temporary spools (one for the
// directories read, copied first, one for the files), since the
// index header (which lists the filesystems met) must come first; RunScan copies it into
// the index after the walk. The Sink owns the spool and updates the scan's stats. Add
// and status take its lock, so every walker thread may call them at once; CopyInto is
// called once, by RunScan's thread, after the walk has ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/format/index_file.h"
#include "lib/scan/entry.h"
#include "lib/scan/estimate.h"
#include "lib/scan/scan.h"

namespace oans {

class Sink {
 public:
  Sink(std::unique_ptr<TempFile> spool, std::unique_ptr<TempFile> dir_spool, ScanStats* stats, Observer* observer,
       const WalkEstimate& estimate)
      : spool_(std::move(spool)), writer_(spool_->fd(), "the scan's temporary spool"),
        dir_spool_(std::move(dir_spool)), dir_writer_(dir_spool_->fd(), "the scan's temporary spool"),
        stats_(stats), observer_(observer), estimate_(estimate) {}
  // Called with each record spooled, under the sink's lock.
  void OnAdd(std::function<void(const FileEntry&)> f) { writer_.OnAdd(std::move(f)); }
  // Spools one directory record.
  void AddDir(IndexDir d) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = dir_writer_.AddDir(std::move(d));
  }
  // Counts and spools one record. A failure to spool is kept: status() and CopyInto
  // report it, and later records are only counted.
  // walked_bytes: the size of the files the walk met so far; files: their number.
  void Add(FileEntry e, uint64_t walked_bytes, uint64_t files) {
    std::lock_guard<std::mutex> lock(mu_);
    CountRecord(e, stats_, observer_);
    if (status_.ok()) status_ = writer_.Add(std::move(e));
    auto now = std::chrono::steady_clock::now();
    if (now - last_ > std::chrono::milliseconds(200)) {
      last_ = now;
      observer_->Progress(WalkProgress(estimate_, walked_bytes, files));
    }
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  // Flushes and copies the records into `out` after its header: directories first.
  Status CopyInto(IndexWriter* out) {
    OANS_RETURN_IF_ERROR(status_);
    OANS_RETURN_IF_ERROR(dir_writer_.Flush());
    OANS_RETURN_IF_ERROR(out->AppendFrames(*dir_spool_, dir_writer_.totals()));
    OANS_RETURN_IF_ERROR(writer_.Flush());
    return out->AppendFrames(*spool_, writer_.totals());
  }

 private:
  std::mutex mu_;
  std::unique_ptr<TempFile> spool_;
  IndexWriter writer_;
  std::unique_ptr<TempFile> dir_spool_;
  IndexWriter dir_writer_;
  ScanStats* stats_;
  Observer* observer_;
  const WalkEstimate estimate_;
  Status status_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace oans
