#include "lib/plan/ops.h"

#include <algorithm>
#include <cstring>

#include "lib/plan/ranges.h"

namespace oans {

std::string EncodeOp(const PlanOp& op) {
  std::string out;
  auto put = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(op.source);
  put(op.offset);
  put(op.length);
  put(op.physical);
  put(uint32_t(op.dests.size()));
  for (const auto& d : op.dests) {
    put(d.file);
    put(d.offset);
    put(d.physical);
  }
  return out;
}

Status DecodeOp(const std::string& in, PlanOp* op) {
  size_t pos = 0;
  bool ok = true;
  auto get = [&](auto* v) {
    if (pos + sizeof *v > in.size()) {
      ok = false;
      return;
    }
    std::memcpy(v, in.data() + pos, sizeof *v);
    pos += sizeof *v;
  };
  uint32_t n = 0;
  get(&op->source);
  get(&op->offset);
  get(&op->length);
  get(&op->physical);
  get(&n);
  if (!ok || n > kMaxDedupeDests) return Status::Corrupt("planner: damaged operation in the temporary store");
  op->dests.resize(n);
  for (auto& d : op->dests) {
    get(&d.file);
    get(&d.offset);
    get(&d.physical);
  }
  return ok ? Status::Ok() : Status::Corrupt("planner: damaged operation in the temporary store");
}

// Splits a unit into operations that fit a round and an ioctl, each with physical
// addresses, and queues them by the source's physical offset.
Status AddOps(PlanState& st, const Unit& u) {
  OANS_ASSIGN_OR_RETURN(auto src, st.details.Get(u.src));
  std::shared_ptr<const Detail> s = src;
  const uint64_t align = std::max<uint64_t>(4096, st.header.filesystems[s->fs].block_size);
  const size_t max_dests = size_t(std::clamp<uint64_t>(st.header.round_size / align - 1, 1, kMaxDedupeDests));
  for (size_t d0 = 0; d0 < u.dests.size(); d0 += max_dests) {
    size_t nd = std::min(max_dests, u.dests.size() - d0);
    uint64_t chunk = std::max<uint64_t>(align, st.header.round_size / (1 + nd) / align * align);
    for (uint64_t c = 0; c < u.length; c += chunk) {
      PlanOp op;
      op.source = u.src;
      op.offset = u.offset + c;
      op.length = std::min(chunk, u.length - c);
      op.physical = PhysicalAt(s->extents, op.offset);
      for (size_t k = d0; k < d0 + nd; ++k) {
        OANS_ASSIGN_OR_RETURN(auto d, st.details.Get(u.dests[k].file));
        uint64_t doff = u.dests[k].offset + c;
        op.dests.push_back({u.dests[k].file, doff, PhysicalAt((d)->extents, doff)});
      }
      bool rewrite = false;  // a destination that is the source range itself: rewritten
      for (const auto& d : op.dests)
        if (IsRewrite(op, d)) rewrite = true;
        else st.stats->planned_bytes += op.length;
      // Rewrites come first, in a pass of their own: apply knows which were not made
      // before the runs that needed them, and later passes share their new extents.
      const bool second = !rewrite && op.source < st.partial_dest.size() && st.partial_dest[op.source];
      const uint32_t pass = rewrite ? 0u : second ? 2u : 1u;
      OpKey key{op.physical, op.offset, op.length, st.ops.size(), 0, 0, op.source, uint32_t(nd), 0, pass};
      st.op_files[op.source] = true;
      for (const auto& d : op.dests) st.op_files[d.file] = true;
      if (nd == 1) {
        key.dest = op.dests[0].file;
        key.dest_offset = op.dests[0].offset;
        key.dest_physical = op.dests[0].physical;
      } else {
        OANS_ASSIGN_OR_RETURN(auto stored, st.op_store.Add(EncodeOp(op)));
        key.dest_offset = stored;
      }
      OANS_RETURN_IF_ERROR(st.ops.Add(key));
    }
  }
  return Status::Ok();
}

Status OpOfKey(PlanState& st, const OpKey& k, std::string* scratch, PlanOp* op) {
  if (k.dests > 1) {
    OANS_RETURN_IF_ERROR(st.op_store.Get(k.stored(), scratch));
    OANS_RETURN_IF_ERROR(DecodeOp(*scratch, op));
  } else {
    *op = PlanOp();
    op->source = k.source;
    op->offset = k.offset;
    op->length = k.length;
    op->physical = k.physical;
    op->dests.push_back({k.dest, k.dest_offset, k.dest_physical});
  }
  if (!st.left_alone.empty())
    std::erase_if(op->dests, [&](const PlanDest& d) { return d.file < st.left_alone.size() && st.left_alone[d.file]; });
  return Status::Ok();
}

}  // namespace oans
