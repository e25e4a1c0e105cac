// oans-apply's command line, shared with the front command: `oans apply` parses the same
// options to tell an option's value from a PLAN (`--until 06:00` takes a value, so no
// PLAN is given there) before it runs oans-apply or applies the newest plan of oans run.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/apply/apply.h"

namespace oans::cli {

struct ApplyCommandLine {
  ApplyOptions o;
  std::string plan_path, prefetch = "on", progress = "auto", journal_path, until;
  std::string io_class = "best-effort", storage = "auto", link = "reflink", summary_file;
  std::vector<std::string> relax;
  bool quiet = false, json = false, no_journal = false;
  uint64_t deadline_s = 0;
};

// Adds oans-apply's options and its PLAN argument (required) to app, writing into c.
void AddApplyOptions(CLI::App& app, ApplyCommandLine* c);

}  // namespace oans::cli
