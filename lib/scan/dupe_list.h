// Duplicate lists from other finders (fdupes, jdupes: paths, one per line, a blank line
// between groups) turned into an extent index, so their users can apply with oans. The
// files are opened and mapped (FIEMAP) but not read: each group gets a group hash, and
// the kernel's compare in FIDEDUPERANGE decides, as always, whether data is shared.
#pragma once

#include <string>

#include "lib/format/frame_stream.h"
#include "lib/base/observer.h"
#include "lib/base/sys.h"

namespace oans {

struct DupeListStats {
  uint64_t groups = 0, files = 0, skipped = 0;
};

// A list to read: its path and the block size of the index made from it.
struct DupeList {
  std::string path;
  uint32_t block_size;
};

// Writes to `out` the index of `list`'s groups; a path that cannot be recorded is skipped
// and told to `observer`.
Status IndexFromDuplicateList(Sys& sys, const DupeList& list, OutputFile* out, Observer* observer,
                              DupeListStats* stats);

}  // namespace oans
