#include "lib/plan/planner.h"

#include "lib/base/storage.h"
#include "lib/base/version.h"
#include "lib/plan/anchors.h"
#include "lib/plan/blocks.h"
#include "lib/plan/group.h"
#include "lib/plan/load.h"
#include "lib/plan/rounds.h"
#include "lib/plan/snapshots.h"
#include "lib/plan/state.h"

namespace oans {

PlanState::PlanState(const PlanOptions& options, Observer* obs, PlanStats* plan_stats)
    : o(options),
      observer(obs),
      stats(plan_stats),
      dir(TempDirectory(options.temp_dir)),
      budget(options.memory),
      details(dir, budget[Use::kDetails], kPathsInMemory),
      whole(dir, budget[Use::kWhole]),
      inodes(dir, budget[Use::kInodes]),
      blocks(dir, budget[Use::kBlocks]),
      anchors(dir, budget[Use::kAnchors]),
      sums(dir, budget[Use::kSums]),
      ops(dir, budget[Use::kOps]),
      op_store(dir, budget[Use::kOpStore]) {}

Status PlanState::AddSums(uint32_t id, const std::string& sector_sums) {
  if (!sums_at.empty() && sums_at[sums_at.size() - 1].id >= id) return Status::Invalid("planner: sums out of order");
  OANS_ASSIGN_OR_RETURN(auto at, sums.Add(sector_sums));
  sums_at.push_back({id, at});
  // The index of the sums comes out of the sums' own line.
  const uint64_t line = budget[Use::kSums], held = sums_at.size() * sizeof(SumsAt);
  sums.set_budget(line - std::min(line, held));
  return Status::Ok();
}

Result<uint64_t> PlanState::SumsOf(uint32_t id) const {
  size_t lo = 0, hi = sums_at.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (sums_at[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo == sums_at.size() || sums_at[lo].id != id) return Status::Corrupt("planner: no sector sums of file " + std::to_string(id));
  return sums_at[lo].at;
}

Status PlanState::CheckStop() const {
  if (o.stop && o.stop->load(std::memory_order_relaxed)) return Status::Interrupted("stopped by a signal; no plan written");
  return Status::Ok();
}

Status RunPlan(const PlanOptions& o, OutputFile* out, Observer* observer, PlanStats* stats,
               std::vector<GroupReport>* reports) {
  Observer quiet;
  if (!observer) observer = &quiet;
  if (o.round_size != 0 && o.round_size < (1u << 20)) return Status::Invalid("--round-size must be at least 1M");
  if (o.memory < (64u << 10)) return Status::Invalid("--memory must be at least 64K");
  PlanState st(o, observer, stats);
  st.header.tool_version = ToolVersion();
  st.header.created_ns = NowNs();
  st.header.round_size = o.round_size;
  st.header.block_size = 0;
  st.header.command_line = o.command_line;
  OANS_RETURN_IF_ERROR(LoadIndexes(st));
  if (st.header.block_size == 0) st.header.block_size = 128 * 1024;
  const StorageKind kind = st.spinning ? StorageKind::kHdd : StorageKind::kSsd;
  if (!o.storage_unknown) st.header.storage = kind;
  if (o.round_size == 0) st.header.round_size = PolicyFor(kind).round_size;
  OANS_RETURN_IF_ERROR(st.CheckStop());
  OANS_RETURN_IF_ERROR(DropDuplicateInodes(st));
  if (o.whole_files) OANS_RETURN_IF_ERROR(GroupWholeFiles(st, reports));
  OANS_RETURN_IF_ERROR(st.CheckStop());
  // Partial matches: the block steps, then the anchor steps.
  // They share one pairs and one runs sorter; each step drains its input.
  ExternalSorter<PairKey, PairLess> pairs(st.dir, st.budget[Use::kPairs]);
  ExternalSorter<RunKey, RunLess> runs(st.dir, st.budget[Use::kRuns]);
  if (o.blocks) {
    OANS_RETURN_IF_ERROR(PairBlocks(st, &pairs));
    OANS_RETURN_IF_ERROR(st.CheckStop());
    OANS_RETURN_IF_ERROR(RunsOfPairs(st, &pairs, &runs));
    OANS_RETURN_IF_ERROR(UnitsOfRuns(st, &runs));
    OANS_RETURN_IF_ERROR(st.CheckStop());
    OANS_RETURN_IF_ERROR(PairsOfAnchors(st, &pairs));
    OANS_RETURN_IF_ERROR(RunsOfAnchors(st, &pairs, &runs));
    OANS_RETURN_IF_ERROR(UnitsOfRuns(st, &runs));
    OANS_RETURN_IF_ERROR(st.CheckStop());
  }
  stats->spilled = st.details.spilled() || st.whole.runs() > 0 || st.ops.runs() > 0;
  std::string said;
  OANS_RETURN_IF_ERROR(ApplySnapshotPolicy(st, &said));
  if (!said.empty()) st.observer->Notice(said);
  OANS_ASSIGN_OR_RETURN(auto rounds, CountRounds(st));
  OANS_RETURN_IF_ERROR(st.CheckStop());
  return WriteRounds(st, rounds, out);
}

}  // namespace oans
