#include "tools/oans/status.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lib/base/units.h"
#include "lib/run/record_figures.h"
#include "tools/common/progress.h"
#include "tools/common/summary.h"

namespace oans::cli {

namespace {

// "2026-12-02 01:30:05" from a record's time, "?" when there is none.
std::string ShortTime(const Json& t) {
  if (!t.is_string()) return "?";
  std::string s = t.get<std::string>();
  if (s.size() >= 19) s = s.substr(0, 10) + " " + s.substr(11, 8);
  return s;
}

// Parts joined with ", " in lines within the summary width, indented by four.
void PrintIndented(const std::vector<std::string>& parts) {
  std::string lines = cli::WrapSummary("", parts, SummaryWidth() - 2);
  for (size_t at = 0; at < lines.size(); at = lines.find('\n', at) + 1) lines.insert(at, "  ");
  std::fputs(lines.c_str(), stdout);
}

// One generation's record in a few lines: when, the exit code, each step, the totals.
void PrintRecord(const Json& g, const Json& running) {
  std::string line = "  generation " + std::to_string(g.value("generation", 0ull)) + ": " + ShortTime(g["started"]);
  const bool live = running.is_object() && running.value("generation", Json()) == g["generation"];
  if (g["ended"].is_string()) line += " to " + ShortTime(g["ended"]).substr(11) + ", exit " + g["exit_code"].dump();
  else line += live ? ", running" : ", did not finish (killed?)";
  std::vector<std::string> steps;
  for (const auto& s : g["steps"]) {
    std::string step = s.value("tool", std::string("?"));
    if (s["seconds"].is_number()) step += " " + FormatDuration(s["seconds"].get<double>());
    if (s["exit_code"].is_number()) step += " (exit " + s["exit_code"].dump() + ")";
    steps.push_back(step);
  }
  std::printf("%s%s\n", line.c_str(), steps.empty() ? "" : ":");
  PrintIndented(steps);
  std::vector<std::string> parts;
  for (const auto& line : FiguresBody(RecordFigures(), g)) parts.insert(parts.end(), line.begin(), line.end());
  PrintIndented(parts);
  if (g.value("message", std::string()) != "")
    std::fputs(FitLine(STDOUT_FILENO, "    " + g["message"].get<std::string>()).c_str(), stdout);
}

}  // namespace

void PrintStatus(const Json& s) {
  std::string roots;
  for (const auto& r : s["roots"]) roots += " " + r.get<std::string>();
  std::fputs(FitLine(STDOUT_FILENO, s["state_dir"].get<std::string>() + ":" + roots).c_str(), stdout);
  const Json& running = s["running"];
  if (running.is_object())
    std::printf("  running: pid %s, %s%s\n", running["pid"].dump().c_str(),
                running["phase"].is_string() ? running["phase"].get<std::string>().c_str() : "?",
                running.contains("started") ? (" since " + ShortTime(running["started"])).c_str() : "");
  if (s.value("next_run", Json()).is_string())
    std::fputs(FitLine(STDOUT_FILENO, "  next run: " + s["next_run"].get<std::string>()).c_str(), stdout);
  if (s["generations"].empty()) std::printf("  no generation recorded yet\n");
  for (const auto& g : s["generations"]) PrintRecord(g, running);
}

}  // namespace oans::cli
