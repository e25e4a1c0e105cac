#include "lib/plan/rounds.h"

#include <unordered_map>

#include "lib/plan/ops.h"
#include "lib/plan/packing.h"
#include "lib/plan/snapshots.h"

namespace oans {
namespace {

// One round being filled: its operations, with file ids replaced by the round's own
// file table.
class RoundBuilder {
 public:
  RoundBuilder(PlanState& st, PlanWriter* writer) : st_(st), writer_(writer) {}
  Status Add(const OpKey& k) {
    PlanOp op;
    OANS_RETURN_IF_ERROR(OpOfKey(st_, k, &scratch_, &op));
    if (op.dests.empty()) return Status::Ok();  // every destination left alone
    OANS_ASSIGN_OR_RETURN(auto s, Local(op.source));
    op.source = s;
    for (auto& d : op.dests) {
      OANS_ASSIGN_OR_RETURN(auto l, Local(d.file));
      d.file = l;
    }
    round_.bytes += k.bytes();
    round_.ops.push_back(std::move(op));
    return Status::Ok();
  }
  Status Emit() {
    if (round_.ops.empty()) return Status::Ok();
    round_.index = written_++;
    OANS_RETURN_IF_ERROR(writer_->AddRound(std::move(round_)));
    round_ = PlanRound();
    local_.clear();
    return Status::Ok();
  }
  uint64_t written() const { return written_; }

 private:
  Result<uint32_t> Local(uint32_t f) {
    auto it = local_.find(f);
    if (it != local_.end()) return it->second;
    OANS_ASSIGN_OR_RETURN(auto d, st_.details.Get(f));
    const Detail& p = *d;
    OANS_ASSIGN_OR_RETURN(auto names, st_.details.Names(f));
    std::vector<std::string> others(std::make_move_iterator(names.begin() + 1), std::make_move_iterator(names.end()));
    PlanFileRef ref{std::move(names[0]), p.fs, p.dev, p.ino, p.size, p.mtime_ns, p.nlink, std::move(others), p.unread};
    round_.files.push_back(std::move(ref));
    const uint32_t id = uint32_t(round_.files.size() - 1);
    local_.emplace(f, id);
    return id;
  }
  PlanState& st_;
  PlanWriter* writer_;
  PlanRound round_;
  std::unordered_map<uint32_t, uint32_t> local_;
  std::string scratch_;
  uint64_t written_ = 0;
};

// A packer over the plan's operations (packing.h), each round handed to `round`.
RoundPacker Packer(PlanState& st, RoundPacker::OnRound round) {
  auto dests_of = [&st, scratch = std::string(), op = PlanOp()](const OpKey& k, std::vector<uint64_t>* out) mutable {
    OANS_RETURN_IF_ERROR(OpOfKey(st, k, &scratch, &op));
    out->clear();
    for (const auto& d : op.dests) out->push_back(d.physical);
    return Status::Ok();
  };
  return RoundPacker(st.header.round_size, std::move(dests_of), std::move(round));
}

// Whether operation `k` still has a destination the snapshot policy did not leave alone.
Result<bool> Kept(PlanState& st, const OpKey& k, std::string* scratch, PlanOp* op) {
  if (st.left_alone.empty()) return true;
  OANS_RETURN_IF_ERROR(OpOfKey(st, k, scratch, op));
  return !op->dests.empty();
}

}  // namespace

Result<uint64_t> CountRounds(PlanState& st) {
  uint64_t rounds = 0;
  RoundPacker packer = Packer(st, [&](const std::vector<OpKey>&) {
    rounds++;
    return Status::Ok();
  });
  std::string scratch;
  PlanOp op;
  uint64_t kept = 0;
  OANS_RETURN_IF_ERROR(st.ops.ForEach([&](const OpKey& k) -> Status {
    OANS_ASSIGN_OR_RETURN(bool keep, Kept(st, k, &scratch, &op));
    kept += keep;
    return keep ? packer.Add(k) : Status::Ok();
  }));
  st.stats->ops = kept;
  OANS_RETURN_IF_ERROR(packer.Finish());
  st.stats->ops_alongside = packer.taken_alongside();
  st.stats->rounds = rounds;
  st.header.rounds = rounds;
  st.header.groups = st.stats->whole_groups + st.stats->block_groups;
  st.header.duplicate_bytes = st.stats->duplicate_bytes;
  st.header.shared_bytes = st.stats->shared_bytes;
  st.header.planned_bytes = st.stats->planned_bytes;
  st.header.rewrite_bytes = st.stats->rewrite_bytes;
  st.header.format_version = st.stats->rewrite_bytes ? kPlanFormatVersion : kPlanFormatNoRewrite;
  return rounds;
}

Status WriteRounds(PlanState& st, uint64_t rounds, OutputFile* out) {
  if (!out) return Status::Ok();  // a report only
  // The files the plan names, fetched in one sequential pass from what is on disk: their
  // paths, and their details in a large plan (Preload reads only a store on disk).
  OANS_RETURN_IF_ERROR(st.details.Preload(st.op_files, st.budget[Use::kPreload], true, st.o.stop));

  PlanWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(st.header));
  RoundBuilder round(st, &writer);
  RoundPacker packer = Packer(st, [&](const std::vector<OpKey>& ops) {
    for (const auto& k : ops) OANS_RETURN_IF_ERROR(round.Add(k));
    return round.Emit();
  });
  uint64_t done = 0;
  std::string scratch;
  PlanOp op;
  OANS_RETURN_IF_ERROR(st.ops.Drain([&](const OpKey& k) -> Status {
    if (++done % PlanState::kStopEvery == 0) OANS_RETURN_IF_ERROR(st.CheckStop());
    OANS_ASSIGN_OR_RETURN(bool keep, Kept(st, k, &scratch, &op));
    return keep ? packer.Add(k) : Status::Ok();
  }));
  OANS_RETURN_IF_ERROR(packer.Finish());
  if (round.written() != rounds) return Status::Corrupt("planner: rounds written differ from rounds counted");
  return writer.Finish();
}

}  // namespace oans
