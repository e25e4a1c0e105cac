#include "lib/apply/verifier.h"

#include <sys/stat.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

#include "lib/apply/errors.h"
#include "lib/base/paths.h"
#include "lib/btrfs/tree_ahead.h"

namespace oans {

Result<Fd> Verifier::Open(const PlanFileRef& f) {
  if (!UnderRoots(f.path)) return Status::Mismatch("outside the plan's roots");
  if (f.fs >= h_.filesystems.size()) return Status::Mismatch("names a filesystem the plan does not list");
  auto fd = Own(sys_, sys_.OpenNoFollow(f.path));
  if (!fd.ok()) return Status::Io(ReasonFor(fd.status().errnum()), fd.status().errnum());
  auto st = sys_.Fstat(fd->get());
  Status bad;
  if (!st.ok()) bad = Status::Io(ReasonFor(st.status().errnum()), st.status().errnum());
  else if (!S_ISREG(st->mode)) bad = Status::Mismatch("changed since scan (not a regular file)");
  else if (!FsMatches(fd->get(), st->dev, f.fs)) bad = Status::Mismatch("on another filesystem than the plan names");
  else if (st->ino != f.ino) bad = Status::Mismatch("changed since scan (replaced by another file)");
  else if (st->size != f.size || st->mtime_ns != f.mtime_ns) bad = Status::Mismatch("changed since scan (modified)");
  if (!bad.ok()) return bad;
  return std::move(*fd);
}

void Verifier::OpenAll(PreparedRound* r) {
  const auto& files = r->round.files;
  r->fds.clear();
  r->fds.resize(files.size());
  r->problem.assign(files.size(), "");
  r->transient.assign(files.size(), false);
  // In inode order: each open reads its inode, and inode order is the inode
  // tables' disk order, so a round's opens sweep them once.
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(files[a].fs, files[a].ino, a) < std::tie(files[b].fs, files[b].ino, b);
  });
  for (size_t i : order) {
    auto fd = Open(files[i]);
    if (fd.ok()) {
      r->fds[i] = std::move(*fd);
      continue;
    }
    r->problem[i] = fd.status().message();
    r->transient[i] = fd.status().code() == Status::Code::kIoError && Transient(fd.status().errnum());
  }
}

void Verifier::CloseAll(PreparedRound* r) {
  for (Fd& fd : r->fds) fd.reset();
}

bool Verifier::UnderRoots(const std::string& p) const {
  for (const auto& r : h_.roots)
    if (PathWithin(p, r)) return true;
  return false;
}

bool Verifier::FsMatches(int fd, uint64_t dev, uint32_t fs) {
  auto it = fs_ok_.find({dev, fs});
  if (it == fs_ok_.end()) {
    auto id = sys_.Identify(fd);
    const FsRecord& want = h_.filesystems[fs];
    bool ok = id.ok() && id->uuid == want.uuid && id->subvolume == want.subvolume;
    it = fs_ok_.emplace(std::make_pair(dev, fs), ok).first;
  }
  return it->second;
}

Status CheckPlanFilesystems(Sys& sys, const PlanHeader& h) {
  for (const auto& root : h.roots) {
    auto fd = Own(sys, sys.OpenNoFollow(root));
    if (!fd.ok()) continue;  // a vanished root only makes its files fail one by one
    auto id = sys.Identify(fd->get());
    if (!id.ok()) continue;
    bool known = false;
    for (const auto& f : h.filesystems) known |= f.uuid == id->uuid;
    if (!known)
      return Status::Mismatch("the plan was made for another filesystem: " + root + " is now on " + id->type +
                              " " + id->uuid + ", which the plan does not name; scan and plan again");
  }
  return Status::Ok();
}

uint64_t ReadPlanTreesAhead(Sys& sys, const PlanHeader& h, uint64_t budget, const TreeAheadStop& stop) {
  TreeAheadStats stats;
  for (const auto& root : h.roots) {
    if (stop && stop()) break;
    auto fd = Own(sys, sys.OpenNoFollow(root));
    if (!fd.ok()) continue;
    auto id = sys.Identify(fd->get());
    // Once per filesystem (stats.filesystems); a hint: what is not read ahead is read later.
    if (id.ok() && id->type == "btrfs") (void)ReadTreesAhead(sys, fd->get(), {TreesFor::kApply, budget, stop}, &stats);
  }
  return stats.bytes;
}

}  // namespace oans
