#include "lib/scan/tree_ahead.h"

#include "lib/base/btrfs_search.h"

namespace oans {

Status ReadTreesAhead(Sys& sys, int fd, uint64_t budget, TreeAheadStats* stats) {
  BtrfsSearch trees[2];
  trees[0].tree_id = 0;  // the subvolume of fd
  trees[1].tree_id = kBtrfsCsumTree;
  trees[1].min = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, 0};
  trees[1].max = {kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, ~uint64_t(0)};
  for (const BtrfsSearch& s : trees) {
    if (stats->bytes >= budget) {
      stats->cut_short = true;
      break;
    }
    OANS_RETURN_IF_ERROR(sys.TreeSearch(fd, s, [&](const BtrfsItem& item) {
      stats->bytes += item.data.size();
      if (stats->bytes < budget) return true;
      stats->cut_short = true;
      return false;
    }));
  }
  return Status::Ok();
}

}  // namespace oans
