#include "tools/common/summary.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>

#include "lib/format/frame_stream.h"
#include "tools/common/progress.h"
#include "tools/common/progress_line.h"

namespace oans::cli {

size_t SummaryWidth() {
  return ::isatty(STDERR_FILENO) ? std::min(kSummaryWidth, TerminalWidth() - 1) : kSummaryWidth;
}

std::string WrapSummary(const std::string& head, const std::vector<std::string>& parts, size_t width) {
  if (width == 0) width = SummaryWidth();
  std::string out = Columns(head) > width ? WrapForTerminal(head, width) : head, line;
  if (out.size() > head.size()) out.pop_back();  // the wrapped head's last newline
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

CLI::Option* AddSummaryFile(CLI::App& app, std::string* path) {
  return app.add_option("--summary-file", *path,
                        "Also write the summary as one JSON line (the fields of --json) to FILE")
      ->type_name("FILE");
}

void WriteSummaryFile(const std::string& tool, const std::string& path, const Json& summary) {
  if (path.empty()) return;
  const std::string line = JsonLine(summary) + "\n";
  // As every output: a new file (mode 0600), put in place whole.
  // Never written through a symlink or a hardlink planted at the name.
  Status s = [&]() -> Status {
    OANS_ASSIGN_OR_RETURN(auto out, OutputFile::Open(path));
    if (::write(out->fd(), line.data(), line.size()) != ssize_t(line.size()))
      return Status::Io("writing " + path, errno);
    return out->Commit();
  }();
  if (!s.ok()) std::fprintf(stderr, "%s: writing the summary: %s\n", tool.c_str(), s.message().c_str());
}

std::FILE* JsonStream(bool stdout_has_output) { return stdout_has_output ? stderr : stdout; }

void EmitSummary(const SummaryTo& to, const Json& json, const std::string& head,
                 const std::vector<std::vector<std::string>>& body) {
  WriteSummaryFile(to.tool, to.summary_file, json);
  if (to.json) {
    PrintJsonLine(JsonStream(to.stdout_has_output), json);
    return;
  }
  if (!to.text) return;
  const std::string first = to.tool + ":" + (head.empty() ? "" : " " + head);
  if (!to.all) {
    std::string text = WrapSummary(first, {});
    for (const auto& line : body) text += WrapSummary("", line);
    std::fputs(text.c_str(), stderr);
    return;
  }
  std::fprintf(stderr, "%s\n", first.c_str());
  for (const auto& line : body)
    for (const auto& part : line) std::fprintf(stderr, "  %s\n", part.c_str());
}

}  // namespace oans::cli
