// One file's record: its identity from the walk, how it is counted, how it fails. The
// rest of it is filled by the record builder (lib/scan/builder.h). The functions own
// nothing; any thread may call them on its own FileEntry.
#pragma once

#include <cstdint>
#include <string>

#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/format/index_file.h"
#include "lib/scan/scan.h"
#include "lib/scan/walk.h"

namespace oans {

// The record of walked file `w` on filesystem `fs`: identity only, nothing read yet.
FileEntry EntryOf(const WalkEntry& w, uint32_t fs);

// Counts record e into the scan's stats (files, bytes, reused or hashed, errors, which
// are also noticed). The caller serializes calls.
void CountRecord(const FileEntry& e, ScanStats* stats, Observer* observer);

// Records problem `s` as e's error; whatever hashes e had are dropped.
void FailEntry(FileEntry* e, const Status& s);

// Records each directory the walk could not read as an error record, so that it is
// counted and noticed.
Status RecordProblems(const WalkResult& w, const ScanOptions& o, IndexWriter* writer, Observer* observer,
                      ScanStats* stats);

}  // namespace oans
