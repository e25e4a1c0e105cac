#include "lib/run/run_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/fd.h"

namespace oans {
namespace {

constexpr const char* kConfigName = "run.conf";
constexpr const char* kMagic = "oans-run 1";
constexpr size_t kMaxConfigSize = 1 << 20;

Result<std::string> Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return Status::Corrupt("a backslash ends the line");
    if (s[i] == '\\') out.push_back('\\');
    else if (s[i] == 'n') out.push_back('\n');
    else return Status::Corrupt(std::string("unknown escape \\") + s[i]);
  }
  return out;
}

Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io("write", errno);
    done += size_t(n);
  }
  return Status::Ok();
}

// A word as a shell would need it: as it is when plain, else in single quotes, or in
// $'...' with \n and \\ when it holds a newline.
std::string ShellWord(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=+,@%-") ==
                        std::string::npos)
    return s;
  if (s.find('\n') != std::string::npos) {
    std::string out = "$'";
    for (char c : s) out += c == '\n' ? "\\n" : c == '\\' ? "\\\\" : c == '\'' ? "\\'" : std::string(1, c);
    return out + "'";
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? "'\\''" : std::string(1, c);
  return out + "'";
}

// Leaves out the per-run options an older version stored among the apply arguments,
// saying so in c->ignored.
void DropPerRunApplyArgs(RunConfig* c) {
  std::vector<std::string> kept;
  const auto& args = c->apply_args;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!IsPerRunApplyOption(args[i])) {
      kept.push_back(args[i]);
      continue;
    }
    std::string shown = args[i];
    if (shown.find('=') == std::string::npos && i + 1 < args.size()) shown += " " + args[++i];
    c->ignored.push_back("apply " + shown + ": ignored, " + shown.substr(0, shown.find_first_of(" =")) +
                         " applies only to the run it is given to now");
  }
  c->apply_args = std::move(kept);
}

// One KEY VALUE line of the file into c; an error says why it is wrong.
Status ParseLine(const std::string& key, const std::string& value, RunConfig* c) {
  if (key == "keep") {
    if (value.empty() || value.size() > 4 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(value) == 0)
      return Status::Corrupt("keep must be a number from 1 to 9999");
    c->keep = uint32_t(std::stoul(value));
  } else if (key == "plan-only") {  // written by older versions
    if (value != "0" && value != "1") return Status::Corrupt("plan-only must be 0 or 1");
    if (value == "1")
      c->ignored.push_back("plan-only 1: ignored, --plan-only applies only to the run it is given to now "
                           "(oans run --plan-only)");
  } else if (key == "root") {
    if (value.empty() || value[0] != '/') return Status::Corrupt("a root must be an absolute path");
    c->roots.push_back(value);
  } else if (key == "scan") {
    c->scan_args.push_back(value);
  } else if (key == "plan") {
    c->plan_args.push_back(value);
  } else if (key == "apply") {
    c->apply_args.push_back(value);
  } else {
    return Status::Corrupt("unknown key \"" + EscapeLine(key) + "\"");
  }
  return Status::Ok();
}

}  // namespace

bool IsPerRunApplyOption(const std::string& arg) {
  for (const char* o : {"--until", "--deadline"}) {
    const size_t n = std::strlen(o);
    if (arg.compare(0, n, o) == 0 && (arg.size() == n || arg[n] == '=')) return true;
  }
  return false;
}

bool AppliesHardlinks(const std::vector<std::string>& args) {
  bool hard = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "--link" && i + 1 < args.size()) hard = args[++i] == "hard";
    else if (args[i].rfind("--link=", 0) == 0) hard = args[i] == "--link=hard";
  }
  return hard;
}

bool SharesWholeFilesOnly(const RunConfig& c) {
  if (AppliesHardlinks(c.apply_args)) return true;
  for (const auto& a : c.plan_args) {
    if (a == "--") break;
    if (a == "--whole-files-only") return true;
  }
  return false;
}

std::string FormatRunConfig(const RunConfig& c, const std::string& state_dir) {
  const auto words = [](const std::vector<std::string>& args) {
    std::string out;
    for (const auto& a : args) out += (out.empty() ? "" : " ") + ShellWord(a);
    return out.empty() ? std::string("(nothing)") : out;
  };
  std::string out = "state directory  " + ShellWord(state_dir) + "\n";
  for (const auto& r : c.roots) out += "root             " + ShellWord(r) + "\n";
  out += "keep             " + std::to_string(c.keep) + "\n";
  out += "oans-scan        " + words(c.scan_args) + "\n";
  out += "oans-plan        " + words(c.plan_args) + "\n";
  out += "oans-apply       " + words(c.apply_args) + "\n";
  for (const auto& i : c.ignored) out += "ignored          " + EscapeLine(i) + "\n";
  return out;
}

std::string EscapeLine(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string EncodeRunConfig(const RunConfig& c) {
  std::string out = std::string(kMagic) + "\n";
  out += "keep " + std::to_string(c.keep) + "\n";
  for (const auto& r : c.roots) out += "root " + EscapeLine(r) + "\n";
  for (const auto& a : c.scan_args) out += "scan " + EscapeLine(a) + "\n";
  for (const auto& a : c.plan_args) out += "plan " + EscapeLine(a) + "\n";
  for (const auto& a : c.apply_args) out += "apply " + EscapeLine(a) + "\n";
  return out;
}

Result<RunConfig> ParseRunConfig(const std::string& text, const std::string& name) {
  RunConfig c;
  size_t pos = 0, line_no = 0;
  const auto bad = [&](const std::string& why) {
    return Status::Corrupt(name + " line " + std::to_string(line_no) + ": " + why +
                           "; run oans run with ROOT... and options to write it again");
  };
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) return bad("the file does not end with a newline (truncated?)");
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line_no == 1) {
      if (line != kMagic) return bad("not an oans run configuration of this version (\"" + EscapeLine(line) + "\")");
      continue;
    }
    size_t sp = line.find(' ');
    if (sp == std::string::npos) return bad("expected KEY VALUE");
    std::string key = line.substr(0, sp);
    auto value = Unescape(line.substr(sp + 1));
    if (!value.ok()) return bad(value.status().message());
    if (Status st = ParseLine(key, *value, &c); !st.ok()) return bad(st.message());
  }
  if (line_no == 0) return Status::Corrupt(name + " is empty; run oans run with ROOT... to write it again");
  if (c.roots.empty()) return Status::Corrupt(name + " names no root; run oans run with ROOT... to write it again");
  DropPerRunApplyArgs(&c);
  return c;
}

Result<RunConfig> LoadRunConfig(int state_fd, const std::string& state_path) {
  const std::string path = state_path + "/" + kConfigName;
  const Fd fd(::openat(state_fd, kConfigName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid() && errno == ENOENT)
    return Status::Invalid("no stored roots in " + state_path + ": give ROOT... the first time");
  if (!fd.valid()) return Status::Io("opening " + path, errno);
  struct stat st;
  std::string text;
  Status s;
  if (::fstat(fd.get(), &st) != 0) s = Status::Io("stat " + path, errno);
  else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
    s = Status::Invalid(path + " is not a regular file of this user writable only by it; remove it");
  else if (st.st_size > off_t(kMaxConfigSize)) s = Status::Corrupt(path + " is larger than 1 MiB; remove it");
  if (s.ok()) {
    text.resize(size_t(st.st_size));
    ssize_t n = ::pread(fd.get(), text.data(), text.size(), 0);
    if (n < 0) s = Status::Io("reading " + path, errno);
    else text.resize(size_t(n));
  }
  if (!s.ok()) return s;
  return ParseRunConfig(text, path);
}

Status SaveRunConfig(int state_fd, const std::string& state_path, const RunConfig& c) {
  const std::string tmp = std::string(kConfigName) + ".new";
  ::unlinkat(state_fd, tmp.c_str(), 0);
  Fd fd(::openat(state_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::Io("creating " + state_path + "/" + tmp, errno);
  Status s = WriteAll(fd.get(), EncodeRunConfig(c));
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::Io("fsync", errno);
  fd.reset();
  if (s.ok() && ::renameat(state_fd, tmp.c_str(), state_fd, kConfigName) != 0) s = Status::Io("rename", errno);
  if (s.ok()) ::fsync(state_fd);
  if (!s.ok()) ::unlinkat(state_fd, tmp.c_str(), 0);
  return s.ok() ? s : s.Prepend("writing " + state_path + "/" + kConfigName + ": ");
}

}  // namespace oans
