#include "lib/run/spawn.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>

namespace oans {
namespace {

std::atomic<pid_t> g_child{0};
std::atomic<bool> g_stop{false};

void Forward(int sig) {
  g_stop = true;
  pid_t c = g_child.load();
  if (c > 0) ::kill(c, sig);
}

void SetHandlers(void (*handler)(int)) {
  struct sigaction sa = {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

}  // namespace

Result<std::string> ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return Status::Io("finding this program (/proc/self/exe)", errno);
  std::string path(buf, size_t(n));
  return path.substr(0, path.find_last_of('/'));
}

bool StopRequested() { return g_stop.load(); }

Result<int> RunChild(const std::vector<std::string>& argv, bool* stopped, bool stdout_to_stderr) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  SetHandlers(Forward);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Status::Io("starting " + argv[0], errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    struct sigaction sa = {};
    sa.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
    if (stdout_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  g_child = pid;
  // A signal that came before the child was known is passed on now.
  if (g_stop.load()) ::kill(pid, SIGTERM);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (stopped) *stopped = g_stop.load();
  if (w < 0) return Status::Io("waiting for " + argv[0], errno);
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127) return Status::Invalid("could not run " + argv[0] + " (is it installed beside oans?)");
    return WEXITSTATUS(status);
  }
  return 128 + WTERMSIG(status);
}

}  // namespace oans
