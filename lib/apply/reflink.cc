#include "lib/apply/reflink.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "lib/apply/errors.h"

namespace oans {
namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;  // FS_NOCOW_FL: its data has no checksums
constexpr size_t kCopyChunk = 1u << 20;

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

Result<int> ReflinkExecutor::CopyToNewExtent(const PreparedRound& r, const PlanOp& op) {
  const int fd = r.fds[op.source];
  const std::string& path = r.round.files[op.source].path;
  // A file without checksums cannot share with one that has them (EINVAL).
  if (sys_.InodeFlags(fd) & kNoCowFlag) return Status::Mismatch("not rewritten: the file is nodatacow");
  // An extent shared with another file or a snapshot (which the plan cannot know when
  // the scan mapped the file from btrfs's trees) stays allocated: a copy would only add
  // its size.
  std::vector<FiemapExtent> extents;
  OANS_RETURN_IF_ERROR(sys_.FiemapRange(fd, op.offset, op.length, &extents));
  for (const auto& e : extents)
    if (e.flags & kExtentShared) return Status::Mismatch("not rewritten: shared with another file or a snapshot");
  OANS_ASSIGN_OR_RETURN(int dir, sys_.OpenDirNoFollow(ParentOf(path)));
  auto same = [&]() -> Result<bool> {
    OANS_ASSIGN_OR_RETURN(auto a, sys_.Identify(dir));
    OANS_ASSIGN_OR_RETURN(auto b, sys_.Identify(fd));
    return a.uuid == b.uuid && !a.uuid.empty();
  }();
  Result<int> tmp = same.ok() && *same ? sys_.OpenTmpfile(dir) : Result<int>(Status::Mismatch("not rewritten: its directory is on another filesystem now"));
  sys_.Close(dir);
  if (!same.ok()) return same.status();
  if (!tmp.ok()) return tmp.status();
  // The copy goes at the same offsets, so the ranges line up and end together at EOF.
  buffer_.resize(kCopyChunk);
  for (uint64_t done = 0; done < op.length;) {
    const size_t want = size_t(std::min<uint64_t>(kCopyChunk, op.length - done));
    Result<size_t> n = sys_.Pread(fd, buffer_.data(), want, op.offset + done);
    Status st = !n.ok() ? n.status()
                : *n == 0 ? Status::Mismatch("differs (changed since scan)")
                          : sys_.Pwrite(*tmp, buffer_.data(), *n, op.offset + done);
    if (!st.ok()) {
      sys_.Close(*tmp);
      return st;
    }
    done += *n;
  }
  return *tmp;
}

void ReflinkExecutor::Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) {
  const auto& files = r.round.files;
  for (const auto& op : r.round.ops) {
    out->ops++;
    auto usable = UsableDests(r, op, *this, out);
    if (usable.empty()) continue;
    // A rewrite: the source range is copied into a new extent first, and that copy is the
    // source every destination (the range itself included) is compared with and shares.
    int src = r.fds[op.source], copy = -1;
    auto self = std::find_if(usable.begin(), usable.end(), [&](const UsableDest& u) {
      return u.file == op.source && u.offset == op.offset;
    });
    if (self != usable.end()) {
      Result<int> c = CopyToNewExtent(r, op);
      if (c.ok()) {
        src = copy = *c;
      } else {
        // A failed call is an error, tried again next run when it may pass; a rewrite
        // found not worth making (a shared extent, nodatacow, ...) is only counted.
        const int e = c.status().errnum();
        const std::string why = e ? "rewrite failed, " + ReasonFor(e) : c.status().message();
        if (e) {
          out->Skip(why, op.length, Transient(e));
          out->errors++;
        } else {
          out->not_rewritten[why] += op.length;
        }
        out->Notice(files[op.source].path + ": " + why);
        usable.erase(self);
        if (usable.empty()) continue;
      }
    }
    std::vector<DedupeDest> dests;
    for (const auto& u : usable) dests.push_back({r.fds[u.file], u.offset, 0, 0});
    // Whole-call errors (EINVAL for the source, ...) count against every destination.
    Status st = sys_.DedupeRange(src, op.offset, op.length, &dests);
    if (!st.ok()) {
      out->Skip(ReasonFor(st.errnum()), op.length * dests.size(), Transient(st.errnum()));
      out->errors += dests.size();
      out->notices.push_back(files[op.source].path + ": dedupe failed, " + ReasonFor(st.errnum()));
    } else {
      for (size_t k = 0; k < dests.size(); ++k) Finish(r, op, src, usable[k], dests[k], out);
    }
    if (copy >= 0) sys_.Close(copy);  // its extents stay, referenced by what shares them
    out->bytes_done += op.length * dests.size();
    tick(op.length * dests.size());
  }
}

void ReflinkExecutor::Finish(const PreparedRound& r, const PlanOp& op, int src, const UsableDest& dest,
                             DedupeDest d, RoundResult* out) {
  const bool rewrite = dest.file == op.source && dest.offset == op.offset;
  uint64_t done = 0;
  for (;;) {
    const uint64_t left = op.length - done;
    if (d.status == kDedupeDiffers) {
      out->Skip("differs (changed since scan)", left, false);
      return;
    }
    if (d.status != kDedupeSame) {
      out->Skip(ReasonFor(-d.status), left, Transient(-d.status));
      out->errors++;
      out->notices.push_back(r.round.files[dest.file].path + ": " + (rewrite ? "rewrite" : "dedupe") + " failed, " +
                             ReasonFor(-d.status));
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
