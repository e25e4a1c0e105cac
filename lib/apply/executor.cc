#include "lib/apply/executor.h"

#include "lib/base/json.h"

namespace oans {

std::vector<UsableDest> UsableDests(const PreparedRound& r, const PlanOp& op, const Executor& ex, RoundResult* out) {
  std::vector<UsableDest> dests;
  const auto& files = r.round.files;
  for (const auto& d : op.dests) {
    if (ex.Handled(files[d.file])) continue;
    if (r.fd(op.source) < 0) {
      out->Skip("source " + r.problem[op.source], op.length, r.transient[op.source]);
      continue;
    }
    if (r.fd(d.file) < 0) {
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
      Json dest_list = Json::array();
      for (const auto& d : dests) {
        Json j{{"path", JsonText(files[d.file].path)}, {"offset", d.offset}};
        if (IsRewrite(op, d)) j["rewrite"] = true;  // copied into a new extent first
        dest_list.push_back(std::move(j));
      }
      print_(JsonLine(Json{{"round", r.round.index},
                           {"source", JsonText(files[op.source].path)},
                           {"offset", op.offset},
                           {"length", op.length},
                           {"dests", std::move(dest_list)}}));
    }
    out->bytes_done += op.length * dests.size();
    tick(op.length * dests.size());
  }
}

}  // namespace oans
