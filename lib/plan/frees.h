// Which partial runs free space. On btrfs a data extent stays allocated, whole, while
// any part of it is referenced ("bookending"): sharing part of a destination's extent
// rewrites its references and frees nothing. So on btrfs, of the runs found between two
// files, the plan keeps only those that leave whole extents of the destination
// unreferenced, and picks as the destination the file that frees more:
//   pieces    the destination's extents (FIEMAP, as the index has them); pieces with the
//             same distance between physical and logical offset are taken as parts of
//             one extent (a file rewritten in place keeps the untouched parts of its
//             extents at their old places), and an extent is freed only when all its
//             pieces are covered and none is preallocated or marked shared; a run that
//             ends at the end of the file covers the rest of its last sector
//   eligible  a run at least --min-run long, or one that replaces whole pieces (it splits
//             nothing: the pieces are already separate)
//   freed     the extents whose pieces the eligible runs cover; inside one file, not
//             counting what the runs' sources keep referenced
//   kept      the eligible runs cut to the freed pieces, no destination byte twice.
// Elsewhere (XFS frees block by block) a run is kept when at least --min-run long.
// A file an earlier stage's operation names is never made a destination. A file may be
// the destination of some runs and the source of others (a copy of a copy, each
// rewritten in place): the runs it is the source of run in a second pass (OpKey::pass),
// after its own ranges have gone, so that what shares it shares the final extents and
// its old ones go free; a chain of three such hops can still keep one.
// What it cannot see: extents placed by an earlier clone at another offset are not
// recognised as parts of one extent; runs of several source files into one destination
// extent are weighed pair by pair, so such an extent is left alone; inside one file, the
// sources of all eligible runs count as kept; and the extents of a file mapped from the
// btrfs trees carry no SHARED flag, so an extent also referenced from outside the scanned
// roots (a snapshot, a reflinked copy) is taken to go free when it does not, as with any
// whole-file dedupe of such a file. A pair with more runs than PairRuns holds is weighed
// a part at a time, and its parts may choose different destinations.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/plan/details.h"
#include "lib/plan/state.h"

namespace oans {

struct Freeing {
  std::vector<RunKey> runs;  // to plan: source -> destination, possibly swapped
  uint64_t freed = 0;        // bytes of destination extents left unreferenced
};

// Which way a pair's runs may go: as found (src to dst), and swapped (dst to src).
struct Ways {
  bool forward = true, back = true;
};

// The runs of `runs` (all from `src` to `dst`, ids in the keys; the same file when the
// ids agree) worth planning. `bookends`: the filesystem keeps partly referenced extents.
Freeing FreeingRuns(const Detail& src, const Detail& dst, const std::vector<RunKey>& runs, uint64_t min_run,
                    bool bookends, Ways ways = {});

// Collects the runs of one pair of files as a stage finds them (in pair order) and passes
// on those FreeingRuns keeps. Holds at most `limit` runs (a sixteenth of --memory): a
// pair with more is weighed a part at a time.
class PairRuns {
 public:
  // `partial`: count each pair's destination bytes as found partial duplicates.
  PairRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* out, uint64_t min_run, bool partial);
  Status Add(const RunKey& r);
  Status Flush();

 private:
  PlanState& st_;
  ExternalSorter<RunKey, RunLess>* out_;
  uint64_t min_run_;
  bool partial_;
  size_t limit_;
  std::vector<RunKey> runs_;
};

}  // namespace oans
