// oans-plan's duplicate reports (--report): fdupes lists and JSON lines, to a file or stdout.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/plan/dirs_report.h"
#include "lib/plan/planner.h"

namespace oans::cli {

// Writes the groups in `format` ("fdupes" or "json") to f; the names left out.
size_t PrintReport(FILE* f, const std::string& format, const std::vector<GroupReport>& groups);

// Runs `print` on `output` ("-": stdout), committed only when all was written.
Status WriteReport(const std::string& output, const std::function<size_t(FILE*)>& print, size_t* left_out);

}  // namespace oans::cli
