// The roots of a scan: each made canonical (lib/base/root_path.h: a symlink root is
// refused), and a root that the walk of another root covers whole dropped, so that no
// file is walked, and recorded, twice: the same root given again, or a root below
// another on the same mount with no directory between them excluded. A root below
// another across a mount point, or below an excluded directory, is kept: the walk of
// the other does not reach it. The index header records the roots kept, which both the
// walk and a scan following btrfs changes (follow.h) start from.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

struct ScanRoots {
  std::vector<std::string> roots;    // canonical, in the order given, none covering another
  std::vector<std::string> notices;  // one per root dropped, naming the root that covers it
};

Result<ScanRoots> CanonicalScanRoots(Sys& sys, const std::vector<std::string>& given,
                                     const std::vector<std::string>& excludes);

}  // namespace oans
