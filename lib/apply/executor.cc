#include "lib/apply/executor.h"

#include "lib/base/json.h"

namespace oans {

std::vector<UsableDest> UsableDests(const PreparedRound& r, const PlanOp& op, const Executor& ex, RoundResult* out) {
  std::vector<UsableDest> dests;
  const auto& files = r.round.files;
  for (const auto& d : op.dests) {
    if (ex.Handled(files[d.file])) continue;
    if (r.fds[op.source] < 0) {
      out->Skip("source " + r.problem[op.source], op.length, r.transient[op.source]);
      continue;
    }
    if (r.fds[d.file] < 0) {
      out->Skip(r.problem[d.file], op.length, r.transient[d.file]);
      continue;
    }
    dests.push_back({d.file, d.offset});
  }
  return dests;
}

void DryRunExecutor::Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) {
  const auto& files = r.round.files;
  for (const auto& op : r.round.ops) {
    out->ops++;
    auto dests = UsableDests(r, op, *this, out);
    if (dests.empty()) continue;
    if (print_) {
      std::string line = "{\"round\":" + std::to_string(r.round.index) + ",\"source\":" +
                         JsonString(files[op.source].path) + ",\"offset\":" + std::to_string(op.offset) +
                         ",\"length\":" + std::to_string(op.length) + ",\"dests\":[";
      for (size_t k = 0; k < dests.size(); ++k)
        line += std::string(k ? "," : "") + "{\"path\":" + JsonString(files[dests[k].file].path) +
                ",\"offset\":" + std::to_string(dests[k].offset) + "}";
      print_(line + "]}");
    }
    out->bytes_done += op.length * dests.size();
    tick(op.length * dests.size());
  }
}

}  // namespace oans
