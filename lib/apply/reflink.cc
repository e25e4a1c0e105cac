#include "lib/apply/reflink.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "lib/apply/errors.h"
#include "lib/base/fd.h"

namespace oans {
namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;  // FS_NOCOW_FL: its data has no checksums
constexpr size_t kCopyChunk = 1u << 20;

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

Result<Fd> ReflinkExecutor::CopyToNewExtent(const PreparedRound& r, const PlanOp& op) {
  const int fd = r.fd(op.source);
  const PlanFileRef& file = r.round.files[op.source];
  if (op.offset >= file.size || op.length > file.size - op.offset)  // a damaged plan
    return Status::Mismatch("not rewritten: the range runs past the end of the file");
  // An extent shared with another file or a snapshot (which the plan cannot know when
  // the scan mapped the file from btrfs's trees) stays allocated: a copy would only add
  // its size.
  std::vector<FiemapExtent> extents;
  OANS_RETURN_IF_ERROR(sys_.FiemapRange(fd, op.offset, op.length, &extents));
  for (const auto& e : extents)
    if (e.flags & kExtentShared) return Status::Mismatch("not rewritten: shared with another file or a snapshot");
  OANS_ASSIGN_OR_RETURN(Fd dir, Own(sys_, sys_.OpenDirNoFollow(ParentOf(file.path))));
  auto same = [&]() -> Result<bool> {
    OANS_ASSIGN_OR_RETURN(auto a, sys_.Identify(dir.get()));
    OANS_ASSIGN_OR_RETURN(auto b, sys_.Identify(fd));
    return a.uuid == b.uuid && !a.uuid.empty();
  }();
  Result<int> opened = same.ok() && *same ? sys_.OpenTmpfile(dir.get())
                                          : Result<int>(Status::Mismatch("not rewritten: its directory is on another filesystem now"));
  dir.reset();
  if (!same.ok()) return same.status();
  OANS_ASSIGN_OR_RETURN(Fd tmp, Own(sys_, std::move(opened)));
  // The copy takes nodatacow from its directory, the file may not (chattr +C after it
  // was written): the two must agree, or the kernel refuses to share (EINVAL).
  const uint32_t want = sys_.InodeFlags(fd) & kNoCowFlag, have = sys_.InodeFlags(tmp.get());
  Status st = (have & kNoCowFlag) == want ? Status::Ok() : sys_.SetInodeFlags(tmp.get(), (have & ~kNoCowFlag) | want);
  if (!st.ok()) st = Status::Mismatch("not rewritten: its copy cannot be made " + std::string(want ? "" : "not ") + "nodatacow like it");
  // The copy goes at the same offsets, so the ranges line up and end together at EOF.
  buffer_.resize(kCopyChunk);
  for (uint64_t done = 0; st.ok() && done < op.length;) {
    const size_t want_bytes = size_t(std::min<uint64_t>(kCopyChunk, op.length - done));
    Result<size_t> n = sys_.Pread(fd, buffer_.data(), want_bytes, op.offset + done);
    st = !n.ok() ? n.status()
         : *n == 0 ? Status::Mismatch("differs (changed since scan)")
                   : sys_.Pwrite(tmp.get(), buffer_.data(), *n, op.offset + done);
    if (n.ok()) done += *n;
  }
  if (!st.ok()) return st;
  return tmp;
}

// Makes the copy of a rewrite (the source of the call from then on), or counts why not
// and leaves the range itself out of `usable`; false when nothing is left to do.
bool ReflinkExecutor::StartRewrite(const PreparedRound& r, const PlanOp& op, std::vector<UsableDest>* usable,
                                   Fd* copy, RoundResult* out) {
  auto self = std::find_if(usable->begin(), usable->end(), [&](const UsableDest& u) { return IsRewrite(op, u); });
  if (self == usable->end()) return true;
  Result<Fd> c = CopyToNewExtent(r, op);
  if (c.ok()) {
    *copy = std::move(*c);
    return true;
  }
  const PlanFileRef& file = r.round.files[op.source];
  unrewritten_.insert({file.fs, file.ino});
  // A failed call is an error, tried again next run when it may pass; a rewrite found
  // not worth making (a shared extent, ...) is only counted.
  const int e = c.status().errnum();
  const std::string why = e ? "rewrite failed, " + ReasonFor(e) : c.status().message();
  if (e) {
    out->Skip(why, op.length, Transient(e));
    out->errors++;
  } else {
    out->not_rewritten[why] += op.length;
  }
  out->Notice(file.path, why);
  usable->erase(self);
  return !usable->empty();
}

void ReflinkExecutor::Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) {
  const auto& files = r.round.files;
  for (const auto& op : r.round.ops) {
    out->ops++;
    auto usable = UsableDests(r, op, *this, out);
    // Rewrites run first (plan pass 0): a file one was not made in keeps the extent it
    // was to free, so sharing other parts of the file would free nothing either.
    usable.erase(std::remove_if(usable.begin(), usable.end(), [&](const UsableDest& u) {
                   const bool left = !IsRewrite(op, u) &&
                                     unrewritten_.count({files[u.file].fs, files[u.file].ino});
                   if (left) out->not_rewritten["not shared: a rewrite in the file was not made"] += op.length;
                   return left;
                 }),
                 usable.end());
    // A rewrite: the source range is copied into a new extent first, and that copy is the
    // source every destination (the range itself included) is compared with and shares.
    // Closed at the end of the op; its extents stay, referenced by what shares them.
    Fd copy;
    if (usable.empty() || !StartRewrite(r, op, &usable, &copy, out)) continue;
    const int src = copy.valid() ? copy.get() : r.fd(op.source);
    std::vector<DedupeDest> dests;
    uint64_t reclaim = 0;  // planned bytes, for progress: a rewrite's own range is not
    for (const auto& u : usable) {
      dests.push_back({r.fd(u.file), u.offset, 0, 0});
      if (!IsRewrite(op, u)) reclaim += op.length;
    }
    // Whole-call errors (EINVAL for the source, ...) count against every destination.
    Status st = sys_.DedupeRange(src, op.offset, op.length, &dests);
    if (!st.ok()) {
      out->Skip(ReasonFor(st.errnum()), op.length * dests.size(), Transient(st.errnum()));
      out->errors += dests.size();
      out->Notice(files[op.source].path, "dedupe failed, " + ReasonFor(st.errnum()));
    } else {
      for (size_t k = 0; k < dests.size(); ++k) Finish(r, op, src, usable[k], dests[k], out);
    }
    out->bytes_done += reclaim;
    tick(reclaim);
  }
}

void ReflinkExecutor::Finish(const PreparedRound& r, const PlanOp& op, int src, const UsableDest& dest,
                             DedupeDest d, RoundResult* out) {
  const bool rewrite = IsRewrite(op, dest);
  uint64_t done = 0;
  for (;;) {
    const uint64_t left = op.length - done;
    if (d.status == kDedupeDiffers) {
      // Files paired by size alone may differ: that is what the compare is for.
      if (r.round.files[op.source].unread || r.round.files[dest.file].unread) out->bytes_differed += left;
      else out->Skip("differs (changed since scan)", left, false);
      return;
    }
    if (d.status != kDedupeSame) {
      out->Skip((rewrite ? "rewrite failed, " : "") + ReasonFor(-d.status), left, Transient(-d.status));
      out->errors++;
      out->Notice(r.round.files[dest.file].path,
                  std::string(rewrite ? "rewrite" : "dedupe") + " failed, " + ReasonFor(-d.status));
      return;
    }
    const uint64_t n = std::min(d.bytes_deduped, left);
    (rewrite ? out->bytes_rewritten : out->bytes_deduped) += n;
    done += n;
    if (done >= op.length) return;
    if (n == 0) {
      out->Skip("no progress", left, false);
      return;
    }
    std::vector<DedupeDest> one{{d.fd, dest.offset + done, 0, 0}};
    Status again = sys_.DedupeRange(src, op.offset + done, op.length - done, &one);
    if (!again.ok()) {
      out->Skip(ReasonFor(again.errnum()), op.length - done, Transient(again.errnum()));
      out->errors++;
      return;
    }
    d = one[0];
  }
}

}  // namespace oans
