#include "tools/common/cli.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cerrno>

#include "lib/base/units.h"

namespace oans::cli {
namespace {
std::atomic<bool>* g_stop = nullptr;

void OnSignal(int) {
  if (g_stop && !g_stop->load()) {
    g_stop->store(true);
    const char msg[] = "\nstopping after the current step (signal again to quit at once)\n";
    ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    return;
  }
  ::_exit(130);
}
}  // namespace

std::string ExitCodesHelp() {
  return "Exit codes: 0 done; 1 done with some files skipped or failed (see the summary);\n"
         "            2 error (bad options or input, I/O error); 3 stopped early (signal or\n"
         "            deadline), run again to continue; 130 killed by a second signal.";
}

CLI::Option* AddSize(CLI::App& app, const std::string& name, uint64_t* out, const std::string& desc) {
  auto* opt = app.add_option_function<std::string>(
      name,
      [out, name](const std::string& v) {
        auto r = ParseSize(v);
        if (!r.ok()) throw CLI::ValidationError(name, r.status().message());
        *out = *r;
      },
      desc);
  opt->type_name("SIZE");
  return opt;
}

CLI::Option* AddDuration(CLI::App& app, const std::string& name, uint64_t* seconds, const std::string& desc) {
  auto* opt = app.add_option_function<std::string>(
      name,
      [seconds, name](const std::string& v) {
        auto r = ParseDurationSeconds(v);
        if (!r.ok()) throw CLI::ValidationError(name, r.status().message());
        *seconds = *r;
      },
      desc);
  opt->type_name("DURATION");
  return opt;
}

Result<uint64_t> SecondsUntil(const std::string& hhmm) {
  int h, m;
  char tail;
  if (std::sscanf(hhmm.c_str(), "%d:%d%c", &h, &m, &tail) != 2 || h < 0 || h > 23 || m < 0 || m > 59)
    return Status::Invalid("'" + hhmm + "': expected a local time HH:MM such as 06:00");
  time_t now = time(nullptr);
  struct tm t;
  localtime_r(&now, &t);
  t.tm_hour = h;
  t.tm_min = m;
  t.tm_sec = 0;
  time_t at = mktime(&t);
  if (at <= now) {
    t.tm_mday += 1;
    at = mktime(&t);
  }
  return uint64_t(at - now);
}

Status SetIdleIoClass() {
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;
  if (syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift) != 0)
    return Status::Io("setting the idle I/O class", errno);
  return Status::Ok();
}

void InstallSignalHandlers(std::atomic<bool>* stop) {
  g_stop = stop;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int Fail(const std::string& tool, const Status& status) { return Fail(tool, status.message()); }

int Fail(const std::string& tool, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), message.c_str());
  return kFailure;
}

std::vector<std::string> Argv(int argc, char** argv) { return std::vector<std::string>(argv, argv + argc); }

int Parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\nTry '%s --help'.\n", app.get_name().c_str(), e.what(), app.get_name().c_str());
    return kFailure;
  }
  return -1;
}

void RaiseFileLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace oans::cli
