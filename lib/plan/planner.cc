#include "lib/plan/planner.h"

#include "lib/base/storage.h"
#include "lib/base/version.h"
#include "lib/plan/anchors.h"
#include "lib/plan/blocks.h"
#include "lib/plan/group.h"
#include "lib/plan/load.h"
#include "lib/plan/rounds.h"
#include "lib/plan/state.h"

namespace oans {

PlanState::PlanState(const PlanOptions& options, Observer* obs, PlanStats* plan_stats)
    : o(options),
      observer(obs),
      stats(plan_stats),
      dir(TempDirectory(options.temp_dir)),
      details(dir, options.memory / 4, std::min<uint64_t>(options.memory / 64, 2u << 20)),
      whole(dir, options.memory / 5),
      inodes(dir, options.memory / 10),
      blocks(dir, options.memory / 5),
      anchors(dir, options.memory / 8),
      sums(dir, options.memory / 8),
      ops(dir, options.memory / 4),
      op_store(dir, options.memory / 10) {}

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
  if (o.round_size == 0) st.header.round_size = PolicyFor(st.spinning ? StorageKind::kHdd : StorageKind::kSsd).round_size;
  OANS_RETURN_IF_ERROR(st.CheckStop());
  OANS_RETURN_IF_ERROR(DropDuplicateInodes(st));
  if (o.whole_files) OANS_RETURN_IF_ERROR(GroupWholeFiles(st, reports));
  OANS_RETURN_IF_ERROR(st.CheckStop());
  if (o.blocks) OANS_RETURN_IF_ERROR(PlanBlocks(st));
  OANS_RETURN_IF_ERROR(st.CheckStop());
  if (o.blocks) OANS_RETURN_IF_ERROR(PlanAnchors(st));
  OANS_RETURN_IF_ERROR(st.CheckStop());
  stats->spilled = st.details.spilled() || st.whole.runs() > 0 || st.ops.runs() > 0;
  return WriteRounds(st, out);
}

}  // namespace oans
