// A scan that follows btrfs changes instead of walking the tree. With --previous on
// btrfs, as root, the previous index's subvolumes are searched for tree blocks written
// since its generation (lib/btrfs/changes.h); only the inodes found there are
// looked at, by their current links, and only the directories that changed are read.
// Every other record of the previous index is carried into the new one as it was, with
// its paths rewritten below directories that were renamed or moved, and dropped below
// directories that were removed. Subvolumes and snapshots below a root are followed as
// roots of their own; the records of one deleted since are dropped. A snapshot taken
// since of a subvolume followed whole takes its source's records, and is followed from
// the source's generation. The previous index is streamed, never held: memory follows
// the change, not the tree. Where the filesystem cannot answer (not btrfs, not root,
// another subvolume, a newer index than the filesystem, another subvolume created or
// moved since, a damaged or incomplete index, a directory moved in from outside),
// nothing is written and the caller walks. Called by RunScan on its own thread; it runs
// readers on TBB.
#pragma once

#include "lib/base/observer.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/format/frame_stream.h"
#include "lib/format/index_file.h"
#include "lib/scan/scan.h"

namespace oans {

// Writes the index to `out` from `start` (the header as far as the options tell it) and
// the changes since o.previous, and sets *followed; or leaves *followed false, `out`
// untouched, and says once why (the caller then walks). With --storage=auto the index
// says the roots spin when the previous one did (the same roots, not measured again).
// Whether a filesystem is mounted below one of `roots` (at it does not count), or the
// mount table cannot be read.
bool MountedBelow(Sys& sys, const std::vector<std::string>& roots);

// Where a scan's results go: the index, notices and progress, counts.
struct ScanOut {
  OutputFile* out;
  Observer* observer;
  ScanStats* stats;
};
Status FollowScan(Sys& sys, const ScanOptions& o, const IndexHeader& start, const ScanOut& to, bool* followed);

}  // namespace oans
