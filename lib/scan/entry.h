// One file's record as the scan fills it: its identity from the walk, then, from the
// open file, its extent map and hashes (reused from the previous index when unchanged).
// The functions own nothing; any thread may call them on its own FileEntry and buffer.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/format/index_file.h"
#include "lib/scan/csum.h"
#include "lib/scan/previous.h"
#include "lib/scan/scan.h"
#include "lib/scan/tree_map.h"
#include "lib/scan/walk.h"

namespace oans {

// The record of walked file `w` on filesystem `fs`: identity only, nothing read yet.
FileEntry EntryOf(const WalkEntry& w, uint32_t fs);

// Counts record e into the scan's stats (files, bytes, reused or hashed, errors, which
// are also noticed). The caller serializes calls.
void CountRecord(const FileEntry& e, ScanStats* stats, Observer* observer);

// Records problem `s` as e's error; whatever hashes e had are dropped.
void FailEntry(FileEntry* e, const Status& s);

// Fills e (identity from the walk) from the open file: extents unless `mapped`, then
// hashes, reused from the previous index when unchanged, else from btrfs checksums
// where `checksums` (may be null) can (lib/scan/csum.h), else read. Problems become e's
// error. False when the scan was stopped while reading: e is then not to be recorded.
bool ReadOpen(Sys& sys, int fd, bool mapped, const std::string& fs_key, const PreviousIndex& prev,
              const ScanOptions& o, Checksums* checksums, std::vector<char>* buffer,
              std::atomic<uint64_t>* bytes_read, FileEntry* e);

// Fills e, whose identity comes from `map` (its items, lib/scan/tree_map.h), without
// opening the file, where `checksums` is usable on btrfs: its extents and flags from the
// map, then hashes reused from the previous index when unchanged, else the keys of its
// inline data, else its sums from the checksum tree (Checksums::FillUnopened), searched
// through `dirfd`. False when any sector would have to be read: the file is to be opened
// (ReadOpen), nothing counted.
bool FillFromTree(int dirfd, const std::string& fs_key, TreeMap&& map, const PreviousIndex& prev,
                  const ScanOptions& o, Checksums* checksums, FileEntry* e);

// Records each directory the walk could not read as an error record, so that it is
// counted and noticed.
Status RecordProblems(const WalkResult& w, const ScanOptions& o, IndexWriter* writer, Observer* observer,
                      ScanStats* stats);

}  // namespace oans
