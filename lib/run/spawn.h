// Running the sibling tools (oans-scan, oans-plan, oans-apply) as child processes.
// They are the binaries a user runs. They keep their own options, progress, signals
// and exit codes. A child runs in its own process group. It gets SIGTERM if we die.
// A SIGINT, SIGTERM or SIGHUP we receive while it runs is passed to it once. So it
// stops cleanly after its current round. A terminal's Ctrl-C reaches only our group.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// The directory holding the running executable (/proc/self/exe), where its siblings are.
Result<std::string> ExecutableDir();

// Runs argv[0] (an absolute path) with argv and waits. Returns its exit code; a child
// killed by signal S gives 128 + S. `stopped` (may be null) is set when a stop signal
// arrived while it ran. With stdout_to_stderr, the child's standard output is our
// standard error. Then ours carries only what we print (oans run --json).
Result<int> RunChild(const std::vector<std::string>& argv, bool* stopped, bool stdout_to_stderr = false);

// True once a stop signal (SIGINT, SIGTERM, SIGHUP) has arrived during any RunChild.
bool StopRequested();

}  // namespace oans
