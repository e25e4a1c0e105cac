// What `oans run` stores in its state directory so that a run without ROOT replays the
// last one: the roots and the options for each tool, in "run.conf" (docs/architecture.md, "oans run"):
//
//   oans-run 1                 first line: format and version
//   keep 3                     generations kept
//   plan-only 0                1: plan, do not apply
//   root /srv/data             one line per root (absolute, canonical)
//   scan --exclude             one line per argument given to oans-scan ...
//   scan *.tmp
//   plan --whole-files-only    ... to oans-plan
//   apply --max-rate           ... and to oans-apply
//   apply 200M
//
// Values are written with C-style escapes (\\ and \n), so any path fits on its line. The
// file is written to a temporary name, fsynced and renamed; it is read without following
// a symlink, and anything unexpected in it is an error naming the file and the line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

struct RunConfig {
  std::vector<std::string> roots;
  std::vector<std::string> scan_args, plan_args, apply_args;
  uint32_t keep = 3;
  bool plan_only = false;
  friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

std::string EncodeRunConfig(const RunConfig& c);
// `name` is used in messages.
Result<RunConfig> ParseRunConfig(const std::string& text, const std::string& name);

// Reads / writes "run.conf" in the state directory. LoadRunConfig gives a kInvalidArgument
// error saying there is none when the file does not exist.
Result<RunConfig> LoadRunConfig(int state_fd, const std::string& state_path);
Status SaveRunConfig(int state_fd, const std::string& state_path, const RunConfig& c);

// C-style escapes for one line: a backslash becomes two, a newline backslash-n.
std::string EscapeLine(const std::string& s);

}  // namespace oans
