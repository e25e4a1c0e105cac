// The verifier: what apply checks before it touches a file. Every path is opened without
// following a symlink in any component, and the open descriptor must still be the file
// the plan describes: a regular file under the plan's roots, the same inode on the same
// filesystem (UUID and btrfs subvolume, asked of the descriptor), the same size and
// mtime. st_dev is never compared: for btrfs subvolumes it is a number handed out at
// mount time, which changes with mount order and across reboots.
// Used by the pipeline stage that prepares rounds (one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/fd.h"
#include "lib/base/sys.h"
#include "lib/btrfs/tree_ahead.h"
#include "lib/format/plan_file.h"

namespace oans {

// A round with its files opened and checked. fds[i] is not valid when files[i] cannot be
// used, and problem[i] says why; transient[i] when that may change by the next run. The
// round owns its descriptors: they are closed with it, or before (Verifier::CloseAll).
struct PreparedRound {
  int fd(size_t i) const { return fds[i].get(); }  // -1 when files[i] cannot be used
  PlanRound round;
  std::vector<Fd> fds;
  std::vector<std::string> problem;
  std::vector<bool> transient;
  uint64_t prefetched = 0;
  bool from_journal = false;  // finished by an earlier run: nothing opened
};

class Verifier {
 public:
  Verifier(Sys& sys, const PlanHeader& header) : sys_(sys), h_(header) {}
  // Opens `f` and checks it against the plan; the descriptor, or why it cannot be used
  // (kMismatch for a file that is not the planned one, kIoError for a failed call).
  Result<Fd> Open(const PlanFileRef& f);
  // Opens every file of r->round into r->fds / problem / transient.
  void OpenAll(PreparedRound* r);
  static void CloseAll(PreparedRound* r);

 private:
  bool UnderRoots(const std::string& p) const;
  bool FsMatches(int fd, uint64_t dev, uint32_t fs);
  Sys& sys_;
  const PlanHeader& h_;
  // (st_dev now, plan filesystem) -> whether that device is the planned filesystem.
  std::map<std::pair<uint64_t, uint32_t>, bool> fs_ok_;
};

// Checks that the plan's filesystems are the ones mounted at its roots.
Status CheckPlanFilesystems(Sys& sys, const PlanHeader& header);

// On a spinning disk, before the first round: the extent and free space trees of each
// btrfs filesystem of the plan's roots, read in disk order (lib/btrfs/tree_ahead.h) when
// they take at most `budget` bytes in all, so that the dedupes' lookups of extent items
// find them in memory instead of seeking between the rounds' reads. Returns the bytes
// read; a tree that cannot be read so (not btrfs, not root, a striped or mirrored
// profile, larger than what is left of `budget`) is left. `stop` ends it early.
uint64_t ReadPlanTreesAhead(Sys& sys, const PlanHeader& h, uint64_t budget, const TreeAheadStop& stop);

}  // namespace oans
