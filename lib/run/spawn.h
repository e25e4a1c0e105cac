// Running the sibling tools (oans-scan, oans-plan, oans-apply) as child processes: the
// same binaries a user runs, with their own option parsing, progress, signal handling
// and exit codes. A child runs in its own process group and gets SIGTERM if we die; a
// SIGINT, SIGTERM or SIGHUP we receive while it runs is passed to it once, so it stops
// cleanly after its current round (a terminal's Ctrl-C reaches only our group).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// The directory holding the running executable (/proc/self/exe), where its siblings are.
Result<std::string> ExecutableDir();

// Runs argv[0] (an absolute path) with argv and waits. Returns its exit code; a child
// killed by signal S gives 128 + S. `stopped` (may be null) is set when a stop signal
// arrived while it ran. The child's standard output is our standard error: our
// standard output carries only what we print (oans run --json).
Result<int> RunChild(const std::vector<std::string>& argv, bool* stopped);

// True once a stop signal (SIGINT, SIGTERM, SIGHUP) has arrived during any RunChild.
bool StopRequested();

}  // namespace oans
