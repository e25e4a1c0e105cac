#include "tools/common/progress.h"

#include <unistd.h>

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
}  // namespace

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
  std::fprintf(stderr, "\r\033[K%s", ProgressLine(tool_, s, elapsed).c_str());
  std::fflush(stderr);
  line_open_ = true;
}

std::string ProgressRenderer::Elapsed() const {
  return FormatDuration(std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count());
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
  std::fprintf(stderr, "%s: %s\n", tool_.c_str(), message.c_str());
}

}  // namespace oans::cli
