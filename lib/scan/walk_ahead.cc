#include "lib/scan/walk_ahead.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

#include "lib/base/fd.h"
#include "lib/base/units.h"
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

std::string InodeSweepRefusal(const InodeSweepCase& c) {
  if (c.available == 0) return "the memory available is not known";
  if (c.table_bytes > c.available / 4)
    return FormatSize(c.table_bytes) + " of inode tables would not stay cached (" + FormatSize(c.available) +
           " available)";
  const bool big_share = c.tree_files > 0 && c.tree_files >= c.used_inodes / 4;
  if (c.root_is_mount || big_share || c.table_bytes <= kInodeSweepAlways) return "";
  return FormatSize(c.table_bytes) + " of inode tables, and the roots hold too few of the filesystem's inodes";
}

namespace {

// One filesystem's sweep, through a descriptor of its root `path`.
void SweepOne(Sys& sys, int fd, const std::string& path, const InodeSweepCase& base, const std::atomic<bool>* stop,
              Observer* observer, ScanStats* stats) {
  auto size = sys.InodeSize(fd);
  if (!size.ok()) {
    if (size.status().code() != Status::Code::kUnsupported)
      observer->Notice("warning: " + path + ": XFS inode tables not read ahead: " + size.status().message());
    return;
  }
  auto usage = sys.Usage(fd);
  if (!usage.ok()) return;
  InodeSweepCase c = base;
  c.used_inodes = usage->used_inodes;
  c.table_bytes = usage->used_inodes * *size;
  const std::string refusal = InodeSweepRefusal(c);
  if (!refusal.empty()) {
    observer->Notice("not reading " + path + "'s XFS inode tables ahead: " + refusal);
    return;
  }
  InodeTables tables;
  Status s = sys.ReadInodeTables(fd, [stop] { return stop && stop->load(); }, &tables);
  stats->inode_tables_inodes += tables.inodes;
  stats->inode_tables_bytes += tables.inodes * *size;
  if (s.errnum() == EPERM)
    observer->Notice("not reading " + path + "'s XFS inode tables ahead: bulkstat needs CAP_SYS_ADMIN (run as root)");
  else if (!s.ok() && !s.IsUnsupported())
    observer->Notice("warning: " + path + ": XFS inode tables not read ahead: " + s.message());
}

}  // namespace

void SweepInodeTables(Sys& sys, const std::vector<std::string>& roots, const std::atomic<bool>* stop,
                      Observer* observer, ScanStats* stats) {
  InodeSweepCase base;
  if (!stats->previous_truncated && !stats->previous_damaged) base.tree_files = stats->previous_records;
  base.available = sys.MemoryAvailable();
  auto mounts = sys.MountPoints();
  std::vector<uint64_t> done;
  for (const auto& root : roots) {
    if (stop && stop->load()) break;
    auto fd = Own(sys, sys.OpenAt(AT_FDCWD, root, true));  // as the walk opens it
    if (!fd.ok()) continue;  // the walk reports it
    auto st = sys.Fstat(fd->get());
    auto id = sys.Identify(fd->get());
    if (!st.ok() || !id.ok() || id->type != "xfs") continue;
    if (std::find(done.begin(), done.end(), st->dev) != done.end()) continue;
    done.push_back(st->dev);
    InodeSweepCase c = base;
    c.root_is_mount = mounts.ok() && std::find(mounts->begin(), mounts->end(), root) != mounts->end();
    SweepOne(sys, fd->get(), root, c, stop, observer, stats);
  }
}

}  // namespace oans
