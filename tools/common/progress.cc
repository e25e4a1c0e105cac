#include "tools/common/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lib/base/json.h"
#include "lib/base/units.h"
#include "tools/common/progress_line.h"

namespace oans::cli {

namespace {
constexpr int kMaxNotices = 200;

// Seconds to one decimal, as the JSON lines give them.
double Tenths(double seconds) { return std::round(seconds * 10) / 10; }

// Lines on a terminal end a column before its width: some terminals wrap on the last.
size_t LineWidth() { return TerminalWidth() - 1; }
}  // namespace

size_t TerminalWidth(int fd) {
  struct winsize ws = {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

std::string FitLine(int fd, const std::string& line) {
  return ::isatty(fd) ? WrapForTerminal(line, TerminalWidth(fd) - 1) : line + "\n";
}

std::string WrapForTerminal(const std::string& text, size_t width) {
  std::string out, line;
  bool fresh = true;  // nothing on the line yet but its indent
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(' ', at), text.size());
    std::string word = text.substr(at, end - at);
    at = end + 1;
    for (;;) {
      const size_t used = Columns(line) + (fresh ? 0 : 1);
      if (used + Columns(word) <= width) {
        line += (fresh ? "" : " ") + word;
        fresh = false;
        break;
      }
      if (fresh) {  // longer than a whole line: cut
        const std::string piece = FirstColumns(word, width - used);
        line += piece;
        word = word.substr(piece.size());
      }
      out += line + "\n";
      line = "  ";
      fresh = true;
    }
  }
  return out + line + "\n";
}

bool ParseProgressMode(const std::string& s, ProgressMode* out) {
  if (s == "auto") *out = ProgressMode::kAuto;
  else if (s == "tty") *out = ProgressMode::kTty;
  else if (s == "json") *out = ProgressMode::kJson;
  else if (s == "none") *out = ProgressMode::kNone;
  else return false;
  return true;
}

ProgressRenderer::ProgressRenderer(const std::string& tool, ProgressMode mode, bool quiet)
    : tool_(tool), mode_(mode), quiet_(quiet), start_(std::chrono::steady_clock::now()), run_start_(start_) {
  if (mode_ == ProgressMode::kAuto) mode_ = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kNone;
  if (quiet_ && mode_ == ProgressMode::kTty) mode_ = ProgressMode::kNone;
}

ProgressRenderer::~ProgressRenderer() { Finish(); }

void ProgressRenderer::ClearLine() {
  if (line_open_) {
    std::fputs("\r\033[K", stderr);
    line_open_ = false;
  }
}

void ProgressRenderer::Finish() {
  if (line_open_) {
    std::fputc('\n', stderr);
    line_open_ = false;
  }
  if (counted_) return;
  counted_ = true;
  for (const auto& [reason, n] : files_by_reason_)
    if (n > kShownPerReason)
      Notice2(std::to_string(n - kShownPerReason) + " more file" + (n - kShownPerReason > 1 ? "s" : "") + ": " +
              reason);
}

void ProgressRenderer::FileNotice(const std::string& path, const std::string& reason) {
  if (quiet_ || !file_reasons_seen_.insert(std::hash<std::string>{}(reason + '\0' + path)).second) return;
  if (++files_by_reason_[reason] <= kShownPerReason) Notice(path + ": " + reason);
}

void ProgressRenderer::Progress(const ProgressSnapshot& s) {
  if (mode_ == ProgressMode::kNone) return;
  if (phase_ != s.phase) {
    phase_ = s.phase;
    start_ = std::chrono::steady_clock::now();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0.2 ? double(s.done_bytes) / elapsed : 0;
  if (mode_ == ProgressMode::kJson) {
    PrintJsonLine(stderr, Json{{"tool", JsonText(tool_)},
                               {"phase", JsonText(s.phase)},
                               {"done_bytes", s.done_bytes},
                               {"total_bytes", s.total_bytes},
                               {"done_items", s.done_items},
                               {"total_items", s.total_items},
                               {"estimate", s.estimate},
                               {"rate_bytes_per_s", uint64_t(std::llround(rate))},
                               {"eta_s", Tenths(ProgressEta(s, elapsed))},
                               {"elapsed_s", Tenths(elapsed)}});
    std::fflush(stderr);
    return;
  }
  std::fprintf(stderr, "\r\033[K%s", ProgressLine(tool_, s, elapsed, LineWidth()).c_str());
  std::fflush(stderr);
  line_open_ = true;
}

double ProgressRenderer::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
}

void ProgressRenderer::Notice(const std::string& message) {
  if (quiet_) return;
  if (++notices_ > kMaxNotices) {
    if (notices_ == kMaxNotices + 1) Notice2("further notices suppressed; see the summary");
    return;
  }
  Notice2(message);
}

void ProgressRenderer::Notice2(const std::string& message) {
  if (mode_ == ProgressMode::kJson) {
    PrintJsonLine(stderr, Json{{"tool", JsonText(tool_)}, {"notice", JsonText(message)}});
    return;
  }
  ClearLine();
  // On a terminal, wrapped to its width; in a log, one line each.
  std::fputs(FitLine(STDERR_FILENO, tool_ + ": " + message).c_str(), stderr);
}

}  // namespace oans::cli
