#include "lib/base/inode_sweep.h"

#include <algorithm>
#include <cerrno>

#include "lib/base/fd.h"
#include "lib/base/units.h"

namespace oans {

std::string InodeSweepRefusal(const InodeSweepCase& c) {
  if (c.available == 0) return "the memory available is not known";
  if (c.table_bytes > c.available / 4 || c.swept_before > c.available / 4 - c.table_bytes)
    return FormatSize(c.table_bytes) + " of inode tables would not stay cached (" + FormatSize(c.available) +
           " available)";
  const bool big_share = c.tree_files > 0 && c.tree_files >= c.used_inodes / 4;
  if (c.root_is_mount || big_share || c.table_bytes <= kInodeSweepAlways) return "";
  return FormatSize(c.table_bytes) + " of inode tables, and the roots hold too few of the filesystem's inodes";
}

namespace {

// One filesystem's sweep, through a descriptor of its root `path`.
InodeSweep SweepOne(Sys& sys, int fd, const std::string& path, InodeSweepCase c, const std::function<bool()>& stop,
                    const std::function<void(const std::string&)>& notice) {
  const std::string not_read = "not reading " + path + "'s XFS inode tables ahead: ";
  auto size = sys.InodeSize(fd);
  auto usage = sys.Usage(fd);
  if (!size.ok() || !usage.ok()) {
    const Status& s = size.ok() ? usage.status() : size.status();
    if (!s.IsUnsupported()) notice("warning: " + path + ": XFS inode tables not read ahead: " + s.message());
    return {};
  }
  c.used_inodes = usage->used_inodes;
  if (__builtin_mul_overflow(usage->used_inodes, uint64_t(*size), &c.table_bytes)) c.table_bytes = UINT64_MAX;
  if (const std::string refusal = InodeSweepRefusal(c); !refusal.empty()) {
    notice(not_read + refusal);
    return {};
  }
  InodeTables tables;
  const Status s = sys.ReadInodeTables(fd, stop, &tables);
  if (s.errnum() == EPERM)
    notice(not_read + "bulkstat needs CAP_SYS_ADMIN (run as root)");
  else if (!s.ok() && !s.IsUnsupported())
    notice("warning: " + path + ": XFS inode tables not read ahead: " + s.message());
  return {tables.inodes, tables.inodes * *size};
}

}  // namespace

InodeSweep SweepInodeTables(Sys& sys, const std::vector<std::string>& roots, uint64_t tree_files,
                            const std::function<bool()>& stop, const std::function<void(const std::string&)>& notice) {
  InodeSweepCase base;
  base.tree_files = tree_files;
  base.available = sys.MemoryAvailable();
  auto mounts = sys.MountPoints();
  const auto is_mount = [&mounts](const std::string& p) {
    return mounts.ok() && std::find(mounts->begin(), mounts->end(), p) != mounts->end();
  };
  InodeSweep total;
  std::vector<uint64_t> done;
  for (const auto& root : roots) {
    if (stop && stop()) break;
    auto fd = Own(sys, sys.OpenNoFollow(root));  // roots are canonical: no symlink; the pass reports a failure
    if (!fd.ok()) continue;
    auto st = sys.Fstat(fd->get());
    if (!st.ok() || std::find(done.begin(), done.end(), st->dev) != done.end()) continue;
    done.push_back(st->dev);
    auto id = sys.Identify(fd->get());
    if (!id.ok() || id->type != "xfs") continue;
    InodeSweepCase c = base;
    c.swept_before = total.bytes;
    c.root_is_mount = is_mount(root);  // roots overlap no more (roots.h): a later one is not above it
    const InodeSweep one = SweepOne(sys, fd->get(), root, c, stop, notice);
    total.inodes += one.inodes;
    total.bytes += one.bytes;
  }
  return total;
}

}  // namespace oans
