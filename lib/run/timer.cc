#include "lib/run/timer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <vector>

namespace oans {
namespace {

constexpr size_t kMaxAnswer = 4096;

// Runs argv (argv[0] absolute) with stdin and stderr on /dev/null; its stdout, at most
// kMaxAnswer bytes, or "" when it could not run or failed.
std::string Capture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return "";
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::dup2(pipefd[1], STDOUT_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while (pid > 0 && (n = ::read(pipefd[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.size() < kMaxAnswer) out.append(buf, size_t(n));
  }
  ::close(pipefd[0]);
  if (pid < 0) return "";
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "";
}

// The systemctl to ask: $OANS_SYSTEMCTL, or systemd's own while systemd runs.
std::string Systemctl() {
  if (const char* env = std::getenv("OANS_SYSTEMCTL"); env && *env == '/') return env;
  struct stat st;
  if (::stat("/run/systemd/system", &st) != 0) return "";  // systemd is not the init
  for (const char* p : {"/usr/bin/systemctl", "/bin/systemctl"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

}  // namespace

std::string TimerUnit(const std::string& state_dir) {
  const std::string name = state_dir.substr(state_dir.find_last_of('/') + 1);
  if (name.empty() || name[0] == '.') return "";
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':')) return "";
  return "oans@" + name + ".timer";
}

std::string NextTimer(const std::string& state_dir) {
  const std::string unit = TimerUnit(state_dir), systemctl = Systemctl();
  if (unit.empty() || systemctl.empty()) return "";
  std::string next = Capture({systemctl, "show", "--property=NextElapseUSecRealtime", "--value", "--", unit});
  while (!next.empty() && (next.back() == '\n' || next.back() == ' ')) next.pop_back();
  if (next.find('\n') != std::string::npos || next == "n/a") return "";
  return next;
}

}  // namespace oans
