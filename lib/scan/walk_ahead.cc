#include "lib/scan/walk_ahead.h"

#include <fcntl.h>

#include <algorithm>

#include "lib/base/fd.h"
#include "lib/base/inode_sweep.h"
#include "lib/btrfs/tree_ahead.h"

namespace oans {

void ReadBtrfsTreesAhead(Sys& sys, const TreesAheadOf& of, const std::vector<std::string>& roots,
                         Observer* observer, ScanStats* stats) {
  const ScanOptions& o = of.o;
  TreeAheadStats ahead;
  std::vector<uint64_t> done;
  for (uint32_t i = 0; i < roots.size() && !(o.stop && o.stop->load()); ++i) {
    auto fd = Own(sys, sys.OpenAt(AT_FDCWD, roots[i], true));  // as the walk opens it
    if (!fd.ok()) continue;  // the walk reports it
    auto st = sys.Fstat(fd->get());
    if (st.ok() && std::find(done.begin(), done.end(), st->dev) == done.end()) {
      done.push_back(st->dev);
      const uint32_t fs = of.filesystems.Of(st->dev, fd->get(), roots[i], i);
      if (of.checksums.Committed(of.filesystems.Key(fs), fd->get())) {
        const TreeAheadJob job{TreesFor::kScan, o.memory, [&o] { return o.stop && o.stop->load(); }};
        Status s = ReadTreesAhead(sys, fd->get(), job, &ahead);
        if (!s.ok()) observer->Notice("warning: " + roots[i] + ": btrfs trees not read ahead: " + s.message());
      }
    }
  }
  stats->tree_ahead_bytes = ahead.bytes;
  stats->tree_ahead_leaves = ahead.leaves;
  stats->tree_ahead_cut = ahead.cut_short;
}

void SweepScanInodeTables(Sys& sys, const std::vector<std::string>& roots, const std::atomic<bool>* stop,
                          Observer* observer, ScanStats* stats) {
  const bool whole = !stats->previous_truncated && !stats->previous_damaged;
  const InodeSweep swept = SweepInodeTables(
      sys, roots, whole ? stats->previous_records : 0, [stop] { return stop && stop->load(); },
      [observer](const std::string& text) { observer->Notice(text); });
  stats->inode_tables_inodes = swept.inodes;
  stats->inode_tables_bytes = swept.bytes;
}

}  // namespace oans
