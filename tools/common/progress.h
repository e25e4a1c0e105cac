// Renders library progress and notices on stderr. A terminal gets a one-line display
// (progress_line.h). Automation gets one JSON object per line. Or nothing is shown.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_set>

#include "lib/base/observer.h"

namespace oans::cli {

enum class ProgressMode { kAuto, kTty, kJson, kNone };

// The width of the terminal on fd (TIOCGWINSZ), 80 when it is not known.
size_t TerminalWidth(int fd = 2);

// line and a newline; on a terminal at fd, wrapped within its width (WrapForTerminal).
std::string FitLine(int fd, const std::string& line);

// text in lines of at most `width` columns, broken at spaces; a longer word is cut.
// The later lines are indented by two. Each line ends with a newline.
std::string WrapForTerminal(const std::string& text, size_t width);

// Parses "auto", "tty", "json", "none".
bool ParseProgressMode(const std::string& s, ProgressMode* out);

class ProgressRenderer : public Observer {
 public:
  // kAuto shows the terminal display only when stderr is a terminal.
  // quiet hides notices and progress. The tools still print errors.
  ProgressRenderer(const std::string& tool, ProgressMode mode, bool quiet);
  ~ProgressRenderer() override;
  void Progress(const ProgressSnapshot& s) override;
  void Notice(const std::string& message) override;
  // The first kShownPerReason files of each reason are printed; the others are counted.
  // Finish prints one line per reason saying how many more there were.
  void FileNotice(const std::string& path, const std::string& reason) override;
  static constexpr uint64_t kShownPerReason = 10;
  // Ends the progress line before a summary is printed (and, once, the counts of files
  // not shown).
  void Finish();
  bool json() const { return mode_ == ProgressMode::kJson; }
  // Seconds since the tool started, for its summary.
  double ElapsedSeconds() const;

 private:
  void ClearLine();
  void Notice2(const std::string& message);
  std::string tool_;
  ProgressMode mode_;
  bool quiet_;
  bool line_open_ = false;
  int notices_ = 0;
  std::map<std::string, uint64_t> files_by_reason_;
  std::unordered_set<uint64_t> file_reasons_seen_;  // hashes of (reason, path): a file counts once
  bool counted_ = false;  // Finish printed the counts
  std::chrono::steady_clock::time_point start_;  // of the current phase
  std::chrono::steady_clock::time_point run_start_;
  std::string phase_;
};

}  // namespace oans::cli
