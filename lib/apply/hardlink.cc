#include "lib/apply/hardlink.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <set>

#include "lib/apply/errors.h"
#include "lib/base/fd.h"

namespace oans {
namespace {

constexpr uint32_t kPermissionBits = 07777;
constexpr uint32_t kImmutableFlag = 0x10, kAppendFlag = 0x20;  // FS_IMMUTABLE_FL, FS_APPEND_FL

bool SameFile(const FileStat& a, const FileStat& b) {
  return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns &&
         a.ctime_ns == b.ctime_ns;
}

std::string HiddenName(const std::string& name) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)rng());
  return "." + name.substr(0, 200) + ".oans-link-" + hex;
}

// Holds read leases on a set of descriptors and gives them up when it goes away.
class Leases {
 public:
  explicit Leases(Sys& sys) : sys_(sys) {}
  ~Leases() {
    for (int fd : held_) (void)sys_.SetLease(fd, false);
  }
  Status Take(int fd, bool* transient) {
    Status s = sys_.SetLease(fd, true);
    if (s.ok()) {
      held_.push_back(fd);
      return s;
    }
    if (s.errnum() == EAGAIN) {
      *transient = true;
      return Status::Mismatch("open for writing by another process");
    }
    if (s.IsUnsupported()) return s.Prepend("cannot make sure no other process writes to it");
    return Status::Io("cannot make sure no other process writes to it (file leases: " +
                          std::string(std::strerror(s.errnum())) + ")",
                      s.errnum());
  }
  // Every lease still held and no one asked to break it.
  bool Intact() {
    for (int fd : held_)
      if (!sys_.LeaseHeld(fd)) return false;
    return true;
  }

 private:
  Sys& sys_;
  std::vector<int> held_;
};

// A destination not linked, counted: skipped, an error, or, paired by size alone
// (`by_size`) and found different by the compare, as expected.
void CountNotLinked(const Status& ls, bool by_size, bool transient, const PlanFileRef& df, RoundResult* out) {
  if (by_size && ls.message() == kContentDiffers) {
    out->bytes_differed += df.size;
    return;
  }
  const bool io = ls.code() == Status::Code::kIoError;
  out->Skip(io ? ReasonFor(ls.errnum()) : ls.message(), df.size, transient || (io && Transient(ls.errnum())));
  if (io) out->errors++;
  out->Notice(df.path, "not linked, " + ls.message());
}

}  // namespace

HardlinkExecutor::HardlinkExecutor(PacedSys& sys, LinkPolicy policy, LinkIntentLog* log)
    : sys_(sys), unpaced_(sys.inner()), policy_(policy), log_(log), reach_(sys) {}

std::string HardlinkExecutor::PolicyRefusal(const LinkPolicy& p, const FileStat& a, const FileStat& b,
                                            const std::vector<std::pair<std::string, std::string>>* xa,
                                            const std::vector<std::pair<std::string, std::string>>* xb) {
  if ((a.mode | b.mode) & (S_ISUID | S_ISGID)) return "setuid or setgid (never linked)";
  if (p.same_owner && a.uid != b.uid) return "another owner (--link-relax=owner allows it)";
  if (p.same_owner && a.gid != b.gid) return "another group (--link-relax=owner allows it)";
  if (p.same_mode && (a.mode & kPermissionBits) != (b.mode & kPermissionBits))
    return "other permissions (--link-relax=mode allows it)";
  if (p.same_xattrs && xa && xb && *xa != *xb)
    return "other extended attributes or ACLs (--link-relax=xattrs allows it)";
  if (p.same_mtime && a.mtime_ns != b.mtime_ns) return "another mtime (--link-relax=mtime allows it)";
  return "";
}

void HardlinkExecutor::Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) {
  const auto& files = r.round.files;
  reach_.Clear();
  names_given_.clear();  // a group's destinations are in one round
  // First the pairs to link, and their intents, recorded at once.
  struct Pair {
    size_t op;
    uint32_t dst;
    LinkIntent intent;
    bool keep = false;  // its intent stays open for the next run (RecoverLink)
  };
  std::vector<Pair> pairs;
  std::vector<uint64_t> op_bytes(r.round.ops.size(), 0);
  for (size_t k = 0; k < r.round.ops.size(); ++k) {
    const PlanOp& op = r.round.ops[k];
    out->ops++;
    auto usable = UsableDests(r, op, *this, out);
    const PlanFileRef& sf = files[op.source];
    op_bytes[k] = op.length * usable.size();
    for (const auto& u : usable) {
      const PlanFileRef& df = files[u.file];
      if (IsRewrite(op, u)) {  // a rewrite: nothing to link
        out->not_rewritten["not rewritten: hardlink mode"] += op.length;
        continue;
      }
      if (u.offset != op.offset || sf.size != df.size) {
        out->Skip("partial duplicate (hardlink mode links whole files only)", op.length, false);
        continue;
      }
      pairs.push_back({k, u.file, IntentFor(r, op.source, u.file)});
    }
  }
  std::vector<LinkIntent> intents;
  for (const auto& p : pairs) intents.push_back(p.intent);
  const Status begun = log_ ? log_->BeginAll(intents) : Status::Ok();
  size_t next = 0;
  for (size_t k = 0; k < r.round.ops.size(); ++k) {
    for (; next < pairs.size() && pairs[next].op == k; ++next) {
      Pair& p = pairs[next];
      const PlanFileRef& df = files[p.dst];
      linked_.insert({df.fs, df.ino});
      bool transient = false;
      Status ls = begun.ok() ? LinkOne(r, r.round.ops[k].source, p.dst, p.intent, &transient, &p.keep) : begun;
      if (ls.ok()) {
        out->files_linked++;
        out->bytes_linked += freed_;
        continue;
      }
      if (transient) linked_.erase({df.fs, df.ino});  // a later round may link it
      CountNotLinked(ls, df.unread || files[r.round.ops[k].source].unread, transient, df, out);
    }
    out->bytes_done += op_bytes[k];
    tick(op_bytes[k]);
  }
  if (!log_ || !begun.ok()) return;
  // The links' renames and removals durable before their records are cleared (the
  // journal may lie on another filesystem).
  const std::set<std::string> unsynced = SyncDirs();
  for (const auto& d : unsynced) {
    out->errors++;
    out->Notice(d, "directory not synced after its links; its hidden link names stay in the journal (the next "
                   "run checks them)");
  }
  intents.clear();
  for (const auto& p : pairs)
    if (!p.keep && !unsynced.count(p.intent.dir)) intents.push_back(p.intent);
  if (Status e = log_->EndAll(intents); !e.ok()) {
    out->errors++;
    out->Notice(pairs.front().intent.dir,
                "this round's hidden link names not marked done in the journal (the next run checks them): " +
                    e.message());
  }
}

// Each directory the round changed, synced once, if it is still the one changed: an
// fsync commits its entries through its filesystem's journal. A syncfs would also write
// every metadata block changed since in place, a seek each on a spinning disk, every round.
std::set<std::string> HardlinkExecutor::SyncDirs() {
  std::set<std::string> unsynced;
  for (const auto& [path, id] : changed_dirs_) {
    auto fd = Own(sys_, sys_.OpenDirNoFollow(path));
    auto st = fd.ok() ? sys_.Fstat(fd->get()) : Result<FileStat>(fd.status());
    if (!st.ok() || st->dev != id.first || st->ino != id.second || !sys_.Fsync(fd->get()).ok())
      unsynced.insert(path);
  }
  changed_dirs_.clear();
  return unsynced;
}

LinkIntent HardlinkExecutor::IntentFor(const PreparedRound& r, uint32_t src, uint32_t dst_i) {
  const std::string& path = r.round.files[dst_i].path;
  const size_t slash = path.rfind('/');
  LinkIntent in;
  if (slash == std::string::npos) return in;  // refused by Replace
  in.dir = slash == 0 ? "/" : path.substr(0, slash);
  in.tmp = HiddenName(path.substr(slash + 1));
  auto s = sys_.Fstat(r.fd(src));
  auto d = sys_.Fstat(r.fd(dst_i));
  if (s.ok()) in.src_ino = s->ino;
  if (d.ok()) {
    in.dst_ino = d->ino;
    in.dst_size = d->size;
    in.dst_mtime_ns = d->mtime_ns;
    in.dst_ctime_ns = d->ctime_ns;
  }
  return in;
}

Status HardlinkExecutor::LinkOne(const PreparedRound& r, uint32_t src, uint32_t dst_i, const LinkIntent& in,
                                 bool* transient, bool* keep) {
  const int src_fd = r.fd(src), dst_fd = r.fd(dst_i);
  const PlanFileRef& dst = r.round.files[dst_i];
  auto s0 = sys_.Fstat(src_fd);
  auto d0 = sys_.Fstat(dst_fd);
  if (!s0.ok()) return s0.status();
  if (!d0.ok()) return d0.status();
  if (s0->dev != d0->dev) return Status::Io("not on one filesystem", EXDEV);
  if (s0->ino == d0->ino) return Status::Mismatch("already the same file");
  if (s0->size != d0->size) return Status::Mismatch("differs (size)");
  if (d0->mtime_ns != dst.mtime_ns || s0->mtime_ns != r.round.files[src].mtime_ns)
    return Status::Mismatch("changed since scan (modified)");
  std::vector<std::pair<std::string, std::string>> xs, xd;
  if (policy_.same_xattrs) {
    auto a = sys_.Xattrs(src_fd);
    auto b = sys_.Xattrs(dst_fd);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    xs = std::move(*a);
    xd = std::move(*b);
  }
  // A round read ahead was paced by the prefetch: its compare is not paced again.
  Sys& reads = r.prefetched == 0 ? sys_ : unpaced_;
  // Files paired by size alone that a rule refuses: the refusal is told only of equal
  // ones; the others differ, as such pairs may, and a compare that fails says why.
  const bool by_size = dst.unread || r.round.files[src].unread;
  auto refuse = [&](Status why) {
    if (!by_size) return why;
    bool ignored = false;
    Status same = compare_.Equal(reads, src_fd, dst_fd, s0->size, [] { return true; }, &ignored);
    return same.ok() ? why : same;
  };
  std::string refusal = PolicyRefusal(policy_, *s0, *d0, &xs, &xd);
  if (!refusal.empty()) return refuse(Status::Mismatch(refusal));
  if (d0->nlink > 1) return refuse(Status::Mismatch("has other hardlinks: linking one name would split them"));
  if (sys_.InodeFlags(src_fd) & (kImmutableFlag | kAppendFlag))
    return refuse(Status::Mismatch("its source is immutable or append-only (never linked to)"));
  if (policy_.same_reach)
    if (Status reach = SameReach(r.round.files[src], *s0, dst); !reach.ok()) return refuse(reach);
  Leases leases(sys_);
  OANS_RETURN_IF_ERROR(leases.Take(src_fd, transient));
  OANS_RETURN_IF_ERROR(leases.Take(dst_fd, transient));
  auto held = [&] { return sys_.LeaseHeld(src_fd) && sys_.LeaseHeld(dst_fd); };
  OANS_RETURN_IF_ERROR(compare_.Equal(reads, src_fd, dst_fd, s0->size, held, transient));
  if (!leases.Intact()) {
    *transient = true;
    return Status::Mismatch("opened for writing by another process during the compare");
  }
  auto s1 = sys_.Fstat(src_fd);
  auto d1 = sys_.Fstat(dst_fd);
  if (!s1.ok() || !d1.ok() || !SameFile(*s0, *s1) || !SameFile(*d0, *d1))
    return Status::Mismatch("changed while being compared");
  freed_ = d0->blocks * 512;  // what the replaced copy held on disk
  OANS_RETURN_IF_ERROR(Replace(src_fd, dst_fd, dst, *d0, in, transient, keep));
  names_given_[{s0->dev, s0->ino}].push_back(dst.path);
  return Status::Ok();
}

Status HardlinkExecutor::SameReach(const PlanFileRef& src, const FileStat& s0, const PlanFileRef& dst) {
  const char* relax = " (--link-relax=reach links anyway)";
  // Paths tell who reaches a file only when its filesystem is mounted once, at its root:
  // a bind mount of a directory reaches what is below it by another way.
  auto mounts = sys_.MountsOf(s0.dev);
  if (!mounts.ok() || mounts->count != 1 || mounts->subtree)
    return Status::Mismatch(std::string("who can reach it cannot be decided (its filesystem is mounted more than "
                                        "once, or a directory of it elsewhere)") + relax);
  // Every name of the source must be known: the plan's and those this run gave it (a
  // third copy of a file joins the first two), each checked to be the file still.
  std::vector<std::string> names;
  std::vector<std::string> given{src.path};
  given.insert(given.end(), src.other_paths.begin(), src.other_paths.end());
  if (auto it = names_given_.find({s0.dev, s0.ino}); it != names_given_.end())
    given.insert(given.end(), it->second.begin(), it->second.end());
  for (const auto& name : given) {
    const size_t slash = name.rfind('/');
    auto dir = Own(sys_, sys_.OpenDirNoFollow(slash == 0 ? "/" : name.substr(0, slash)));
    if (!dir.ok()) continue;
    auto st = sys_.StatAt(dir->get(), name.substr(slash + 1));
    if (st.ok() && st->ino == s0.ino && st->dev == s0.dev) names.push_back(name);
  }
  if (names.size() < s0.nlink)
    return Status::Mismatch(std::string("who can reach its source cannot be decided (hardlinks the scan did not "
                                        "see)") + relax);
  auto want = reach_.Of(dst.path);
  if (!want.ok()) return Status::Mismatch(std::string("who can reach it cannot be decided") + relax);
  for (const auto& name : names) {
    auto got = reach_.Of(name);
    if (!got.ok()) return Status::Mismatch(std::string("who can reach its source cannot be decided") + relax);
    if (*got != *want) return Status::Mismatch(std::string("other users can reach its source than can reach it") + relax);
  }
  return Status::Ok();
}

Status HardlinkExecutor::Replace(int src_fd, int dst_fd, const PlanFileRef& dst, const FileStat& d0,
                                 const LinkIntent& in, bool* transient, bool* keep) {
  const size_t slash = dst.path.rfind('/');
  if (slash == std::string::npos) return Status::Invalid(dst.path + ": not an absolute path");
  const std::string name = dst.path.substr(slash + 1);
  OANS_ASSIGN_OR_RETURN(auto src, sys_.Fstat(src_fd));
  // The intent recorded before the round (Run) must describe the files as compared: the
  // next run's recovery decides by it what a hidden name holds.
  if (in.tmp.empty() || in.src_ino != src.ino || in.dst_ino != d0.ino || in.dst_size != d0.size ||
      in.dst_mtime_ns != d0.mtime_ns || in.dst_ctime_ns != d0.ctime_ns)
    return Status::Mismatch("changed while being compared");
  OANS_ASSIGN_OR_RETURN(Fd dir_fd, Own(sys_, sys_.OpenDirNoFollow(in.dir)));
  const int dir = dir_fd.get();
  OANS_ASSIGN_OR_RETURN(FileStat dir_st, sys_.Fstat(dir));
  changed_dirs_.emplace(in.dir, std::make_pair(dir_st.dev, dir_st.ino));  // synced before the intent ends
  auto still = [&]() -> Status {
    OANS_ASSIGN_OR_RETURN(auto now, sys_.StatAt(dir, name));
    return SameFile(now, d0) ? Status::Ok() : Status::Mismatch("changed while being compared");
  };
  OANS_RETURN_IF_ERROR(still());
  // A hidden name that cannot be removed stays recorded (*keep): the next run removes it.
  auto remove = [&] { *keep = !sys_.UnlinkAt(dir, in.tmp).ok(); };
  OANS_RETURN_IF_ERROR(sys_.LinkAt(src_fd, dir, in.tmp));
  if (Status s = still(); !s.ok()) {
    remove();
    return s;
  }
  if (Status x = sys_.ExchangeAt(dir, in.tmp, name); !x.ok()) {
    remove();
    return x;
  }
  // The name is the source's inode now and the hidden name the old destination. A
  // process that looked the name up before the exchange and is opening it for writing
  // holds the old inode: the leases say so, and the exchange is undone for it.
  auto old = sys_.StatAt(dir, in.tmp);
  // Someone who linked the old file meanwhile would keep it under another name: the names
  // are exchanged back rather than split it.
  auto now = sys_.Fstat(dst_fd);
  bool intact = old.ok() && old->ino == d0.ino && now.ok() && now->nlink == 1 && sys_.LeaseHeld(src_fd) &&
                sys_.LeaseHeld(dst_fd) && sys_.SetLease(dst_fd, true).ok();
  if (!intact) {
    Status back = sys_.ExchangeAt(dir, in.tmp, name);
    if (!back.ok()) {
      *keep = true;  // the intent stays open: the next run sorts it out
      return back;
    }
    remove();
    *transient = true;
    return Status::Mismatch("opened for writing by another process while being linked");
  }
  Status gone = sys_.UnlinkAt(dir, in.tmp);
  if (!gone.ok()) *keep = true;  // the old file is still there: the next run removes it
  return gone;
}

namespace {

// The hidden name of intent `in` in its directory `dir`: removed when it is the source's
// second link or the unchanged old destination; a written old destination is kept (said
// in *notice); anything else is not ours and left.
Status ResolveHidden(Sys& sys, int dir, const LinkIntent& in, std::string* notice) {
  auto st = sys.StatAt(dir, in.tmp);
  if (!st.ok()) return st.status().errnum() == ENOENT ? Status::Ok() : st.status();  // ENOENT: never made, or removed
  if (!S_ISREG(st->mode)) return Status::Ok();  // not ours: leave it
  if (st->ino == in.src_ino) return sys.UnlinkAt(dir, in.tmp);
  if (st->ino == in.dst_ino && st->size == in.dst_size && st->mtime_ns == in.dst_mtime_ns)
    return sys.UnlinkAt(dir, in.tmp);
  if (st->ino == in.dst_ino)
    *notice = in.dir + "/" + in.tmp + ": kept: a file replaced by a hardlink was written to afterwards by a process "
              "that had it open; compare it with the file beside it and keep what you need";
  return Status::Ok();
}

}  // namespace

Status RecoverLink(Sys& sys, const LinkIntent& in, std::string* notice) {
  auto opened = Own(sys, sys.OpenDirNoFollow(in.dir));
  // Gone, and the name with it; any other failure (a symlink put in its path) keeps it.
  if (!opened.ok()) return opened.status().errnum() == ENOENT ? Status::Ok() : opened.status();
  const int dir = opened->get();
  if (in.tmp.find('/') != std::string::npos || in.tmp.find(".oans-link-") == std::string::npos)
    return Status::Corrupt("journal names a hidden link that oans does not make: " + in.tmp);
  // Whatever is found, the directory is synced before the caller ends the intent: a
  // removal made here, or one the killed run made before it could sync, could otherwise
  // come back after a crash with no record left of it.
  Status s = ResolveHidden(sys, dir, in, notice);
  return s.ok() ? sys.Fsync(dir) : s;
}

}  // namespace oans
