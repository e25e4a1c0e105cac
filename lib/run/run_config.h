// What `oans run` stores in its state directory so that a run without ROOT replays the
// last one: the roots and the options for each tool, in "run.conf" (docs/architecture.md, "oans run"):
//
//   oans-run 1                 first line: format and version
//   keep 3                     generations kept
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
//
// Options that belong to one run are never stored (--plan-only, --until, --deadline,
// --quiet, --progress). Older versions stored some of them: a "plan-only" line, and
// --until or --deadline among the apply arguments. Such a file is still read; what it
// stores of them is left out and said in RunConfig::ignored.
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
  // Read but not used: per-run options an older version stored, one line each saying
  // what and why (never written back).
  std::vector<std::string> ignored;
  friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

// The oans-apply options that belong to one run and are never stored.
bool IsPerRunApplyOption(const std::string& arg);

// Whether these oans-apply arguments ask for hardlinks (--link=hard or --link hard; the
// last --link given counts, as in oans-apply).
bool AppliesHardlinks(const std::vector<std::string>& apply_args);

// Whether a run shares only whole files: it applies hardlinks, or plans with
// --whole-files-only. Its scan then reads no file of a unique size.
bool SharesWholeFilesOnly(const RunConfig& c);

// What is stored, for people (oans run --show-config): the state directory, the roots,
// keep and each tool's arguments (shell-quoted), and what was ignored.
std::string FormatRunConfig(const RunConfig& c, const std::string& state_dir);

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
