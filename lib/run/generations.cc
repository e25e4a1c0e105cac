#include "lib/run/generations.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

#include "lib/base/fd.h"

namespace oans {
namespace {

std::string Numbered(const char* prefix, uint64_t n, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%06llu%s", prefix, (unsigned long long)n, suffix);
  return buf;
}

// The number of `name` when it is prefix + digits + suffix.
bool ParseNumbered(const std::string& name, const std::string& prefix, const std::string& suffix, uint64_t* n) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 6 || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *n = std::stoull(digits);
  return true;
}

}  // namespace

std::string IndexName(uint64_t n) { return Numbered("gen-", n, ".idx"); }
std::string PlanName(uint64_t n) { return Numbered("plan-", n, ".capnp"); }
std::string JournalName(uint64_t n) { return Numbered("plan-", n, ".capnp.journal"); }
std::string AppliedName(uint64_t n) { return Numbered("applied-", n, ""); }
std::string RecordName(uint64_t n) { return Numbered("run-", n, ".json"); }

Status MarkApplied(int state_fd, uint64_t n) {
  const Fd fd(::openat(state_fd, AppliedName(n).c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::Io("marking generation " + std::to_string(n) + " applied", errno);
  return Status::Ok();
}

Result<std::vector<Generation>> ListGenerations(int state_fd) {
  int fd = ::openat(state_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Io("reading the state directory", errno);
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return Status::Io("reading the state directory", errno);
  }
  std::map<uint64_t, Generation> gens;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    uint64_t n;
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;
    if (ParseNumbered(name, "gen-", ".idx", &n)) gens[n].index = true;
    else if (ParseNumbered(name, "plan-", ".capnp", &n)) gens[n].plan = true;
    else if (ParseNumbered(name, "plan-", ".capnp.journal", &n)) gens[n].journal = true;
    else if (ParseNumbered(name, "applied-", "", &n)) gens[n].applied = true;
    else if (ParseNumbered(name, "run-", ".json", &n)) gens[n].record = true;
    else continue;
    gens[n].number = n;
  }
  ::closedir(d);
  std::vector<Generation> out;
  for (auto& [n, g] : gens) out.push_back(g);
  return out;
}

const Generation* NewestIndex(const std::vector<Generation>& gens) {
  for (auto it = gens.rbegin(); it != gens.rend(); ++it)
    if (it->index) return &*it;
  return nullptr;
}

Status RemoveOldGenerations(int state_fd, uint32_t keep, std::vector<uint64_t>* removed) {
  OANS_ASSIGN_OR_RETURN(auto gens, ListGenerations(state_fd));
  std::vector<uint64_t> complete;
  for (const auto& g : gens)
    if (g.index && g.plan) complete.push_back(g.number);
  if (keep == 0 || complete.size() <= keep) return Status::Ok();
  uint64_t oldest_kept = complete[complete.size() - keep];
  for (const auto& g : gens) {
    if (g.number >= oldest_kept) break;
    for (const auto& name : {AppliedName(g.number), JournalName(g.number), PlanName(g.number), IndexName(g.number),
                             RecordName(g.number)})
      if (::unlinkat(state_fd, name.c_str(), 0) != 0 && errno != ENOENT)
        return Status::Io("removing " + name + " of an old generation", errno);
    removed->push_back(g.number);
  }
  return Status::Ok();
}

}  // namespace oans
