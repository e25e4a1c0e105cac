// The one code that fills a file's record past its identity: whatever source found the
// file (the walk, the kept files' pipeline, a followed scan's change search), the
// builder settles its extents and gives it keys by the first of these steps that can:
//   1. reuse: a record of the same data, the previous index's record of the same inode
//      unchanged (PreviousIndex::Reuse), or one the source names (FileAt::same_data);
//   2. the btrfs tree's items: a file that is one uncompressed inline extent, hashed
//      from its item (lib/btrfs/tree_map.h);
//   3. btrfs checksums: sector sums from the checksum tree, reading only the sectors
//      that have none (lib/scan/csum.h);
//   4. reading the file: its data hashed (HashFile).
// A new way to save work is one more step here. An unopened file gets steps 1 to 3,
// none of which reads data; past them the source opens it and asks again.
// On btrfs the extents carry no FIEMAP SHARED flag, whichever path mapped them: the
// trees do not give it (it would take a walk of back references), so the same file gets
// the same record by every path. Any thread; one object per scan (or per source).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/sys.h"
#include "lib/format/index_file.h"
#include "lib/scan/csum.h"
#include "lib/scan/previous.h"
#include "lib/scan/scan.h"

namespace oans {

// Where the builder finds the file besides its record's identity.
struct FileAt {
  FileAt(std::string key, bool on_btrfs) : fs_key(std::move(key)), btrfs(on_btrfs) {}
  std::string fs_key;  // its filesystem, as PreviousIndex and Checksums key it
  bool btrfs = false;
  int fd = -1;         // the file, open; -1: not opened
  int dirfd = -1;      // unopened: its directory, through which btrfs is searched
  // The record's extents and inode flags are set (FIEMAP, or the tree's items). An
  // unopened file without them takes the previous record's, if btrfs says they hold.
  bool mapped = false;
  bool extents_unchanged = false;
  std::string_view inline_data;          // the tree's: the whole file, inline
  const FileEntry* same_data = nullptr;  // a record the source knows holds the same data
  bool reuse_only = false;               // step 1 only: the source reads the file later
  // Step 4 drops the file's pages from the page cache once read (ReadKept says when).
  bool drop_pages = false;
};

enum class Built : uint8_t {
  kDone,     // the record is complete (maybe with an error)
  kOpenIt,   // not without reading: the source opens the file (or keeps it) and asks again
  kStopped,  // the scan was stopped while reading: not to be recorded
};

class RecordBuilder {
 public:
  RecordBuilder(Sys& sys, const ScanOptions& o, const PreviousIndex& prev, Checksums* checksums,
                std::atomic<uint64_t>* bytes_read)
      : sys_(sys), o_(o), prev_(prev), checksums_(checksums), bytes_read_(bytes_read) {}

  Built Build(const FileAt& at, FileEntry* e) const;

  // A file paired by size (ScanOptions::pair_by_size): its identity checked on the open at.fd and
  // its extents and flags set, but nothing read; e->size_paired unless it failed (then
  // e holds the error).
  void MapOnly(const FileAt& at, FileEntry* e) const;

 private:
  bool Reuse(const FileAt& at, FileEntry* e) const;
  Built FromOpen(const FileAt& at, FileEntry* e) const;
  Built FromItems(const FileAt& at, FileEntry* e) const;
  Built Read(const FileAt& at, FileEntry* e, ReadWhy why) const;

  Sys& sys_;
  const ScanOptions& o_;
  const PreviousIndex& prev_;
  Checksums* checksums_;
  std::atomic<uint64_t>* bytes_read_;
};

}  // namespace oans
