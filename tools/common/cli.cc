#include "tools/common/cli.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
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
         "            deadline), run again to continue; 4 another oans run holds the state\n"
         "            directory (oans run and apply; nothing done); 130 killed by a second signal.";
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

namespace {

// "HH:MM" into h, m; false when it is not one.
bool ParseClock(const char* s, int* h, int* m) {
  char tail;
  return std::sscanf(s, "%2d:%2d%c", h, m, &tail) == 2 && std::isdigit((unsigned char)s[0]) && *h >= 0 &&
         *h <= 23 && *m >= 0 && *m <= 59;
}

std::string LocalTime(time_t t) {
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

}  // namespace

Result<uint64_t> SecondsUntil(const std::string& when, time_t now) {
  const std::string forms = "'" + when + "': expected a local time HH:MM such as 06:00, or a date and time "
                            "YYYY-MM-DD HH:MM such as '2026-12-02 06:00'";
  struct tm t;
  localtime_r(&now, &t);
  int h, m;
  bool dated = false;
  if (when.size() == 16 && (when[10] == ' ' || when[10] == 'T')) {
    int y, mo, d;
    char tail;
    if (std::sscanf(when.c_str(), "%4d-%2d-%2d%c", &y, &mo, &d, &tail) != 4 || mo < 1 || mo > 12 || d < 1 ||
        d > 31 || !ParseClock(when.c_str() + 11, &h, &m))
      return Status::Invalid(forms);
    t.tm_year = y - 1900;
    t.tm_mon = mo - 1;
    t.tm_mday = d;
    dated = true;
  } else if (!ParseClock(when.c_str(), &h, &m) || when.size() != 5) {
    return Status::Invalid(forms);
  }
  t.tm_hour = h;
  t.tm_min = m;
  t.tm_sec = 0;
  t.tm_isdst = -1;
  time_t at = mktime(&t);
  if (dated) {
    if (at <= now) return Status::Invalid("'" + when + "' is in the past (it is " + LocalTime(now) + " now)");
    return uint64_t(at - now);
  }
  if (at <= now) {
    t.tm_mday += 1;
    t.tm_isdst = -1;
    at = mktime(&t);
  }
  if (at - now > time_t(kMaxUntilAheadHours) * 3600) {
    char ahead[32];
    std::snprintf(ahead, sizeof ahead, "%lldh%02lldm", (long long)(at - now) / 3600, (long long)(at - now) % 3600 / 60);
    return Status::Invalid("'" + when + "' is " + ahead + " away (next at " + LocalTime(at) +
                           "): more than " + std::to_string(kMaxUntilAheadHours) +
                           "h ahead, as when a run starts after its window has passed, which would run for most "
                           "of a day; to mean it, give the date: '" + LocalTime(at) + "'");
  }
  return uint64_t(at - now);
}

Result<uint64_t> SecondsUntil(const std::string& when) { return SecondsUntil(when, time(nullptr)); }

std::string EscapeLine(const std::string& path) {
  if (path.find_first_of("\n\\") == std::string::npos) return path;
  std::string out;
  out.reserve(path.size() + 8);
  for (char c : path) {
    if (c == '\n') out += "\\n";
    else if (c == '\\') out += "\\\\";
    else out += c;
  }
  return out;
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
  // An option given again takes its last value (lists add up), as GNU tools do: what
  // oans run passes after the stored options overrides them.
  for (CLI::Option* o : app.get_options([](CLI::Option* o) { return o->nonpositional(); }))
    if (o->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
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
