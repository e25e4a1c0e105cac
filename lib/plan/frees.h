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
//   rewrites  an extent the eligible runs cover but for at most --max-rewrite percent of
//             its bytes (none never freed, not compressed, not inside one file) is freed
//             too: its uncovered bytes are planned as rewrites (copied into new extents
//             first, docs/format.md), and the destination is the file that frees more
//             net of them; inside such an extent, runs shorter than --min-run are
//             shared too, not copied (and count towards its coverage). PairRuns plans these last, only for a destination into which
//             no other pair's runs go (in a chain of copies, the copy it was made from
//             may free it without any rewrite).
// Elsewhere (XFS frees block by block) a run is kept when at least --min-run long.
// A file an earlier stage's operation names is never made a destination, nor is a
// member of a whole-file group (its twins keep its extents, or will). A file may be
// the destination of some runs and the source of others (a copy of a copy, each
// rewritten in place): the runs it is the source of run in a second pass (OpKey::pass),
// after its own ranges have gone, so that what shares it shares the final extents and
// its old ones go free; a chain of three such hops can still keep one.
// What it cannot see: extents placed by an earlier clone at another offset are not
// recognised as parts of one extent; runs of several source files into one destination
// extent are weighed pair by pair, so such an extent is left alone; inside one file, the
// sources of all eligible runs count as kept; and btrfs records carry no SHARED flag
// (lib/scan/builder.h), so an extent also referenced from outside the scanned roots (a
// snapshot, a reflinked copy) is taken to go free when it does not, as with any
// whole-file dedupe of such a file. A pair with more runs than PairRuns holds is weighed
// a part at a time, and its parts may choose different destinations.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "lib/plan/details.h"
#include "lib/plan/state.h"

namespace oans {

struct Freeing {
  std::vector<RunKey> runs;  // to plan: source -> destination, possibly swapped
  uint64_t freed = 0;        // bytes of destination extents left unreferenced
  // Ranges of the destination to copy into new extents so that the extents they were
  // part of go free: each a RunKey from the destination to itself at the same offset.
  std::vector<RunKey> rewrites;
  uint64_t rewritten = 0;    // their bytes
  uint64_t net() const { return freed - rewritten; }
};

// Which way a pair's runs may go: as found (src to dst), and swapped (dst to src).
struct Ways {
  bool forward = true, back = true;
};

// The runs of `runs` (all from `src` to `dst`, ids in the keys; the same file when the
// ids agree) worth planning. `bookends`: the filesystem keeps partly referenced extents.
// `max_rewrite`: an extent the runs cover but for at most this percent of its bytes is
// freed too, its other bytes rewritten (0: never).
Freeing FreeingRuns(const Detail& src, const Detail& dst, const std::vector<RunKey>& runs, uint64_t min_run,
                    bool bookends, Ways ways = {}, uint32_t max_rewrite = 0);

// The order of the rewrites PairRuns sets aside: by destination, then the pair's other
// file; a pair's marker first.
struct DeferLess {
  bool operator()(const RunKey& a, const RunKey& b) const {
    return std::make_tuple(a.dst, a.src, a.offset < UINT64_MAX, a.dst_offset, a.offset) <
           std::make_tuple(b.dst, b.src, b.offset < UINT64_MAX, b.dst_offset, b.offset);
  }
};

// Collects the runs of one pair of files as a stage finds them (in pair order) and passes
// on those FreeingRuns keeps without rewriting (max_rewrite 0). Holds at most `limit`
// runs (half the kWeigh line, budget.h): a pair with more is weighed a part at a time.
// What rewriting would free besides (--max-rewrite) is set aside, a pair at a time, and
// planned by Finish only for a destination no other pair's runs go into: another file may
// free it without a rewrite (the copy it was made from, in a chain of copies), and one
// destination planned from two pairs would be shared twice.
class PairRuns {
 public:
  // `partial`: count each pair's destination bytes as found partial duplicates.
  PairRuns(PlanState& st, ExternalSorter<RunKey, RunLess>* out, uint64_t min_run, bool partial);
  Status Add(const RunKey& r);
  // Passes on the runs of every pair added, then the rewrites set aside that still hold.
  Status Finish();

 private:
  Status Flush();
  // Sets aside the runs and rewrites `f` adds to `f0` (the same pair, without rewriting).
  Status Defer(const Freeing& f, const Freeing& f0);
  // How many pairs' kept runs go into file `id`: 0, 1, or 2 for more.
  int DestCount(uint32_t id) const { return st_.partial_dest[id] + st_.dest_twice[id]; }
  PlanState& st_;
  ExternalSorter<RunKey, RunLess>* out_;
  uint64_t min_run_;
  bool partial_;
  size_t limit_;
  std::vector<RunKey> runs_;
  // The last pair (source << 32 | destination) and destination runs were passed on for:
  // the parts of one pair count once in dest_twice.
  std::pair<uint64_t, uint32_t> last_emitted_{UINT64_MAX, UINT32_MAX};
  // Set-aside rewrites: per pair a marker {other, dst, kMarker, own, 0} (own: whether the
  // pair's runs without rewriting go into dst), then its runs, and its rewrites as
  // {other, dst, kRewrite, length, offset}.
  ExternalSorter<RunKey, DeferLess> deferred_;
};

}  // namespace oans
