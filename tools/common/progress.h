// Renders library progress and notices on stderr: a one-line display (progress_line.h) on
// a terminal, one JSON object per line for automation, or nothing.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "lib/base/observer.h"

namespace oans::cli {

enum class ProgressMode { kAuto, kTty, kJson, kNone };

// Parses "auto", "tty", "json", "none".
bool ParseProgressMode(const std::string& s, ProgressMode* out);

class ProgressRenderer : public Observer {
 public:
  // kAuto shows the terminal display only when stderr is a terminal. quiet hides
  // notices and progress (errors are still printed by the tools).
  ProgressRenderer(const std::string& tool, ProgressMode mode, bool quiet);
  ~ProgressRenderer() override;
  void Progress(const ProgressSnapshot& s) override;
  void Notice(const std::string& message) override;
  // Ends the progress line before a summary is printed.
  void Finish();
  bool json() const { return mode_ == ProgressMode::kJson; }
  // Time since the tool started, for its summary ("12.3s", "4m05s").
  std::string Elapsed() const;

 private:
  void ClearLine();
  void Notice2(const std::string& message);
  std::string tool_;
  ProgressMode mode_;
  bool quiet_;
  bool line_open_ = false;
  int notices_ = 0;
  std::chrono::steady_clock::time_point start_;  // of the current phase
  std::chrono::steady_clock::time_point run_start_;
  std::string phase_;
};

}  // namespace oans::cli
