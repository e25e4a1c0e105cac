#include "lib/run/run_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

}  // namespace

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
  out += std::string("plan-only ") + (c.plan_only ? "1" : "0") + "\n";
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
    if (key == "keep") {
      if (value->empty() || value->size() > 4 || value->find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(*value) == 0)
        return bad("keep must be a number from 1 to 9999");
      c.keep = uint32_t(std::stoul(*value));
    } else if (key == "plan-only") {
      if (*value != "0" && *value != "1") return bad("plan-only must be 0 or 1");
      c.plan_only = *value == "1";
    } else if (key == "root") {
      if (value->empty() || (*value)[0] != '/') return bad("a root must be an absolute path");
      c.roots.push_back(*value);
    } else if (key == "scan") c.scan_args.push_back(*value);
    else if (key == "plan") c.plan_args.push_back(*value);
    else if (key == "apply") c.apply_args.push_back(*value);
    else return bad("unknown key \"" + EscapeLine(key) + "\"");
  }
  if (line_no == 0) return Status::Corrupt(name + " is empty; run oans run with ROOT... to write it again");
  if (c.roots.empty()) return Status::Corrupt(name + " names no root; run oans run with ROOT... to write it again");
  return c;
}

Result<RunConfig> LoadRunConfig(int state_fd, const std::string& state_path) {
  const std::string path = state_path + "/" + kConfigName;
  int fd = ::openat(state_fd, kConfigName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    return Status::Invalid("no stored roots in " + state_path + ": give ROOT... the first time");
  if (fd < 0) return Status::Io("opening " + path, errno);
  struct stat st;
  std::string text;
  Status s;
  if (::fstat(fd, &st) != 0) s = Status::Io("stat " + path, errno);
  else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
    s = Status::Invalid(path + " is not a regular file of this user writable only by it; remove it");
  else if (st.st_size > off_t(kMaxConfigSize)) s = Status::Corrupt(path + " is larger than 1 MiB; remove it");
  if (s.ok()) {
    text.resize(size_t(st.st_size));
    ssize_t n = ::pread(fd, text.data(), text.size(), 0);
    if (n < 0) s = Status::Io("reading " + path, errno);
    else text.resize(size_t(n));
  }
  ::close(fd);
  if (!s.ok()) return s;
  return ParseRunConfig(text, path);
}

Status SaveRunConfig(int state_fd, const std::string& state_path, const RunConfig& c) {
  const std::string tmp = std::string(kConfigName) + ".new";
  ::unlinkat(state_fd, tmp.c_str(), 0);
  int fd = ::openat(state_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("creating " + state_path + "/" + tmp, errno);
  Status s = WriteAll(fd, EncodeRunConfig(c));
  if (s.ok() && ::fsync(fd) != 0) s = Status::Io("fsync", errno);
  ::close(fd);
  if (s.ok() && ::renameat(state_fd, tmp.c_str(), state_fd, kConfigName) != 0) s = Status::Io("rename", errno);
  if (s.ok()) ::fsync(state_fd);
  if (!s.ok()) ::unlinkat(state_fd, tmp.c_str(), 0);
  return s.ok() ? s : s.Prepend("writing " + state_path + "/" + kConfigName + ": ");
}

}  // namespace oans
