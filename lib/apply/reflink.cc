#include "lib/apply/reflink.h"

#include <algorithm>

#include "lib/apply/errors.h"

namespace oans {

void ReflinkExecutor::Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) {
  const auto& files = r.round.files;
  for (const auto& op : r.round.ops) {
    out->ops++;
    auto usable = UsableDests(r, op, *this, out);
    if (usable.empty()) continue;
    std::vector<DedupeDest> dests;
    for (const auto& u : usable) dests.push_back({r.fds[u.file], u.offset, 0, 0});
    // Whole-call errors (EINVAL for the source, ...) count against every destination.
    Status st = sys_.DedupeRange(r.fds[op.source], op.offset, op.length, &dests);
    if (!st.ok()) {
      out->Skip(ReasonFor(st.errnum()), op.length * dests.size(), Transient(st.errnum()));
      out->errors += dests.size();
      out->notices.push_back(files[op.source].path + ": dedupe failed, " + ReasonFor(st.errnum()));
    } else {
      for (size_t k = 0; k < dests.size(); ++k) Finish(r, op, usable[k], dests[k], out);
    }
    out->bytes_done += op.length * dests.size();
    tick(op.length * dests.size());
  }
}

void ReflinkExecutor::Finish(const PreparedRound& r, const PlanOp& op, const UsableDest& dest, DedupeDest d,
                             RoundResult* out) {
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
      out->notices.push_back(r.round.files[dest.file].path + ": dedupe failed, " + ReasonFor(-d.status));
      return;
    }
    const uint64_t n = std::min(d.bytes_deduped, left);
    out->bytes_deduped += n;
    done += n;
    if (done >= op.length) return;
    if (n == 0) {
      out->Skip("no progress", left, false);
      return;
    }
    std::vector<DedupeDest> one{{d.fd, dest.offset + done, 0, 0}};
    Status again = sys_.DedupeRange(r.fds[op.source], op.offset + done, op.length - done, &one);
    if (!again.ok()) {
      out->Skip(ReasonFor(again.errnum()), op.length - done, Transient(again.errnum()));
      out->errors++;
      return;
    }
    d = one[0];
  }
}

}  // namespace oans
