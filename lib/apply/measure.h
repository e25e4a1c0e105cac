// What an apply gave back, measured rather than predicted: the space in use on each
// filesystem of the plan (lib/btrfs/space.h), committed and measured before the first
// round and after the last. The difference includes whatever else was written to those
// filesystems meanwhile; the figure is flagged approximate when it moved more than the
// apply's own operations can explain (more data freed than bytes shared, or more data
// written than bytes rewritten).
#pragma once

#include <string>
#include <vector>

#include "lib/apply/stats.h"
#include "lib/base/fd.h"
#include "lib/base/sys.h"
#include "lib/format/plan_file.h"

namespace oans {

class SpaceMeter {
 public:
  // Opens one root per filesystem of the plan (by UUID) and measures it. A root that
  // cannot be opened or measured leaves the apply unmeasured.
  void Before(Sys& sys, const PlanHeader& h);
  // Measures again and fills the space fields of `stats`. The roots close with the meter.
  void After(Sys& sys, ApplyStats* stats);

 private:
  struct Fs {
    Fd fd;
    std::string uuid;
    SpaceUse before;
  };
  std::vector<Fs> fs_;
  bool ok_ = false;
};

// Whether a measured change goes beyond what `s`'s operations explain (other writers).
bool SpaceApproximate(const ApplyStats& s);

}  // namespace oans
