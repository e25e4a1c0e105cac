#include "tools/common/summary.h"

namespace oans::cli {

std::string WrapSummary(const std::string& head, const std::vector<std::string>& parts, size_t width) {
  std::string out = head, line;
  auto flush = [&] {
    if (!line.empty()) out += "\n  " + line;
    line.clear();
  };
  std::vector<const std::string*> kept;
  for (const auto& p : parts)
    if (!p.empty()) kept.push_back(&p);
  for (size_t i = 0; i < kept.size(); ++i) {
    const std::string piece = *kept[i] + (i + 1 < kept.size() ? "," : "");
    // Two columns of indent, one of space between pieces.
    if (!line.empty() && 2 + line.size() + 1 + piece.size() > width) flush();
    line += (line.empty() ? "" : " ") + piece;
  }
  flush();
  if (head.empty()) return out.empty() ? out : out.substr(1) + "\n";
  return out + "\n";
}

std::vector<std::string> Skipped(const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  for (const auto& p : parts)
    if (!p.empty()) out.push_back(out.empty() ? "skipped " + p : p);
  return out;
}

std::string Counted(unsigned long long n, const std::string& what) {
  return n ? std::to_string(n) + " " + what : "";
}

}  // namespace oans::cli
