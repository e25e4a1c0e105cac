// What every oans tool shares: exit codes, strict size/duration options, signal handling,
// error printing. Tools stay thin: parse options into a lib struct, call one lib entry
// point, print the result, return one of these codes.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans::cli {

enum ExitCode : int {
  kOk = 0,        // everything done
  kPartial = 1,   // done, but some files were skipped or failed (see the summary)
  kFailure = 2,   // nothing or not all could be done: bad input, bad options, I/O error
  kStopped = 3,   // stopped early by a signal or deadline; re-run to continue
  kBusy = 4,      // oans run/apply: another run holds the state directory's lock; nothing done
};

// Documentation of the exit codes for --help footers.
std::string ExitCodesHelp();

// Adds an option whose value is a size with units ("4K", "128M"); the parse fails with a
// message naming the option and the accepted forms.
CLI::Option* AddSize(CLI::App& app, const std::string& name, uint64_t* out, const std::string& desc);

// Sets the stop flag on SIGINT/SIGTERM (a second signal exits at once with 130) and
// ignores SIGPIPE so a closed pipe is reported as an error instead of killing us.
void InstallSignalHandlers(std::atomic<bool>* stop);

// Prints "TOOL: error: MESSAGE" to stderr and returns kFailure.
int Fail(const std::string& tool, const Status& status);
int Fail(const std::string& tool, const std::string& message);

std::vector<std::string> Argv(int argc, char** argv);

// Runs app.parse and maps errors/--help/--version to an exit code; returns -1 to go on.
// An option with one value given more than once takes the last.
int Parse(CLI::App& app, int argc, char** argv);

// Adds an option whose value is a duration ("90s", "30m", "2h").
CLI::Option* AddDuration(CLI::App& app, const std::string& name, uint64_t* seconds, const std::string& desc);

// Seconds from `now` until local time `when`: "HH:MM" (the next one, today or tomorrow)
// or "YYYY-MM-DD HH:MM" (also with a 'T' between). A bare HH:MM more than
// kMaxUntilAheadHours ahead is refused: it is almost always a window already missed by a
// late start (06:00 asked at 06:01), which would otherwise run for a day; give the date
// to mean it. A date and time in the past is refused.
inline constexpr int kMaxUntilAheadHours = 18;
Result<uint64_t> SecondsUntil(const std::string& when, time_t now);
Result<uint64_t> SecondsUntil(const std::string& when);

// A path made safe for reports that print one path per line: a newline becomes the two
// characters \n and a backslash becomes \\ (C-style), so no name can add a line and the
// exact name can be recovered. Names without either are printed as they are.
std::string EscapeLine(const std::string& path);

// Puts this process's I/O in the idle class (only served when the disk is otherwise idle).
Status SetIdleIoClass();

// Raises the open-file limit to its hard maximum (walks keep directories open).
void RaiseFileLimit();

}  // namespace oans::cli
