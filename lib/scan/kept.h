// The files a scan keeps for reading after the walk: those not finished while the walk
// had them open (in disk order on HDD, in inode order, and every hardlink, whose names
// are merged into one record). MergeKept turns the walk's list into them, on RunScan's
// thread; ReadKept then reads and hashes them through a bounded TBB pipeline: one
// serial stage hands out files in order, `stats->threads` readers open and hash them in
// parallel, and one serial stage counts and writes the records, in the kept order, to
// the index. RunScan owns the list and the writer; the pipeline's threads touch only
// the file they were handed, and the stats and writer only from the last stage.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/format/index_file.h"
#include "lib/scan/builder.h"
#include "lib/scan/filesystems.h"
#include "lib/scan/previous.h"
#include "lib/scan/scan.h"
#include "lib/scan/walk.h"

namespace oans {

// A file kept for reading after the walk (disk order, or a hardlink to merge).
struct Candidate {
  WalkEntry entry;
  std::vector<std::string> other_paths;
  uint32_t fs = 0;
};

// Hardlinks: one record per inode, the smallest path first, the others alongside
// (counted in stats->hardlinks). Empties `walked`; in physical order, sorts by the first
// physical extent.
std::vector<Candidate> MergeKept(std::vector<WalkEntry>* walked, Filesystems& filesystems, ScanStats* stats);

// The first physical byte of a file mapped as `extents` (UINT64_MAX: none), for disk order.
uint64_t FirstPhysical(const std::vector<FiemapExtent>& extents);

// What a scan leaves unread by size, where no checksums key the files.
struct BySize {
  bool unique_unread = false;  // whole files only: a file whose size no other has is never opened
  bool pair = false;           // two files of one size are mapped, not read
  bool any() const { return unique_unread || pair; }
};

// What of `kept` needs no reading, as `rule` says. `written`: the sizes of the records
// already written.
struct SetAside {
  // Files whose size no other file has (rule.unique_unread): recorded unread (hashed
  // false, no error), never opened.
  std::vector<FileEntry> unread;
  // Two files of one size (rule.pair), both kept, on one filesystem, neither known to
  // the previous index (`known_before`: a pair planned once, or a file with keys): they
  // are mapped but not read; the plan pairs them whole and apply's compare decides.
  std::vector<Candidate> paired;
};
using KnownBefore = std::function<bool(const Candidate&)>;

// Where no btrfs checksums key the files unread (`unkeyed`): whole files only reads no
// unique size, and pairs are mapped as the options say; outside whole files only, only
// in a scan without --previous (a first scan), so that the next one keys them.
BySize BySizeFor(const ScanOptions& o, bool unkeyed);

// Files the previous index holds unchanged are not paired by size: a pair planned once
// is read this time (its plan found it different, or was not applied), and a file with
// keys has them reused.
KnownBefore KnownBeforeIn(const PreviousIndex& prev, Filesystems& filesystems);

SetAside SetAsideUnique(std::vector<Candidate>* kept, std::vector<uint64_t> written,
                        const KnownBefore& known_before, BySize rule);

// For kept files the walk did not open: maps each one's start (FIEMAP) and sorts them
// in disk order. A file that cannot be opened stays; its read reports it.
void PlaceKept(Sys& sys, std::vector<Candidate>* kept);

// Bytes of the kept files read so far and in all, for the "hash" progress.
struct KeptProgress {
  uint64_t done = 0;
  uint64_t total = 0;
};

// What the kept files' pipeline works with; RunScan owns all of it.
struct KeptRun {
  Sys& sys;
  const ScanOptions& o;
  const RecordBuilder& builder;
  Filesystems& filesystems;
  IndexWriter* writer;
  Observer* observer;
  ScanStats* stats;
  uint64_t found;  // files the walk found, for progress
};

// SetAsideUnique, then the records set aside written to `job.writer` (counted in its
// stats; the pairs mapped in the order kept), and on HDD the others placed in disk
// order (PlaceKept).
Status WriteUnread(const KeptRun& job, std::vector<Candidate>* kept, std::vector<uint64_t> written,
                   const KnownBefore& known_before, BySize rule);

// Reads `kept` in order, each record filled by job.builder, and writes the records to
// job.writer, until done, a write fails or options.stop is set. Returns the first write
// error.
Status ReadKept(const KeptRun& job, std::vector<Candidate>& kept, KeptProgress* progress);

}  // namespace oans
