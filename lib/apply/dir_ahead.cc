#include "lib/apply/dir_ahead.h"

#include <dirent.h>

#include <algorithm>
#include <map>
#include <utility>

#include "lib/base/fd.h"
#include "lib/base/units.h"

namespace oans {
namespace {

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return slash == 0 && path.size() > 1 ? "/" : "";
  return path.substr(0, slash);
}

std::string Child(const std::string& dir, const std::string& name) {
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

void PlanDirectories::AddPath(const std::string& path) {
  // A directory met before has its own parents in the set already.
  for (std::string d = Parent(path); !d.empty() && !over_ && dirs_.insert(d).second; d = Parent(d)) {
    bytes_ += d.size() + sizeof(std::string) + 16;  // the string, and the set's node about it
    if (bytes_ > limit_) over_ = true;
  }
}

void PlanDirectories::Add(const PlanRound& round) {
  for (const PlanFileRef& f : round.files) {
    AddPath(f.path);
    for (const std::string& other : f.other_paths) AddPath(other);
  }
  if (over_) dirs_.clear();
}

std::vector<std::string> PlanDirectories::Take() {
  std::vector<std::string> out;
  out.reserve(dirs_.size());
  while (!dirs_.empty()) out.push_back(std::move(dirs_.extract(dirs_.begin()).value()));
  std::sort(out.begin(), out.end());
  return out;
}

bool WantsPlanDirectories(const ApplyOptions& o, const PlanHeader& h) {
  const bool spinning = o.storage == StorageChoice::kHdd ||
                        (o.storage == StorageChoice::kAuto && h.storage && *h.storage == StorageKind::kHdd);
  return spinning && o.prefetch && !o.dry_run;
}

uint64_t ListDirectoriesAhead(Sys& sys, const std::vector<std::string>& roots, const std::vector<std::string>& dirs,
                              const std::function<bool()>& stop) {
  if (dirs.empty()) return 0;
  using Key = std::pair<uint64_t, uint64_t>;  // device, inode
  std::map<Key, std::string> pending;
  for (const auto& root : roots) {
    auto fd = Own(sys, sys.OpenDirNoFollow(root));
    auto st = fd.ok() ? sys.Fstat(fd->get()) : Result<FileStat>(fd.status());
    if (st.ok()) pending.emplace(Key{st->dev, st->ino}, root);
  }
  uint64_t listed = 0;
  Key last{0, 0};
  std::vector<DirEntry> batch;
  while (!pending.empty() && !(stop && stop())) {
    auto it = pending.upper_bound(last);
    if (it == pending.end()) it = pending.begin();
    last = it->first;
    const std::string path = std::move(it->second);
    pending.erase(it);
    auto fd = Own(sys, sys.OpenDirNoFollow(path));
    if (!fd.ok()) continue;
    auto st = sys.Fstat(fd->get());
    // Replaced since its parent was listed, or a mount point: not listed.
    if (!st.ok() || st->dev != last.first || st->ino != last.second) continue;
    ++listed;
    while (!(stop && stop())) {
      auto read = sys.ReadDir(fd->get(), &batch);
      if (!read.ok()) break;
      for (const DirEntry& e : batch) {
        if ((e.type != DT_DIR && e.type != DT_UNKNOWN) || e.name == "." || e.name == "..") continue;
        std::string child = Child(path, e.name);
        if (std::binary_search(dirs.begin(), dirs.end(), child)) pending.emplace(Key{st->dev, e.ino}, std::move(child));
      }
      if (!*read) break;
    }
  }
  return listed;
}

std::string ListAheadRefusal(uint64_t dirs, uint64_t block_size, uint64_t available) {
  if (dirs == 0) return "";
  if (available == 0) return "the memory available is not known";
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(dirs, block_size, &bytes) || bytes > available / 4)
    return std::to_string(dirs) + " directories' blocks would not stay cached (" + FormatSize(available) +
           " available)";
  return "";
}

uint64_t ListPlanDirectoriesAhead(Sys& sys, const std::vector<std::string>& roots, std::vector<std::string>* dirs,
                                  const std::function<bool()>& stop,
                                  const std::function<void(const std::string&)>& notice) {
  if (!dirs || dirs->empty()) return 0;
  constexpr uint64_t kDirBlock = 4096;
  uint64_t listed = 0;
  const std::string refusal = ListAheadRefusal(dirs->size(), kDirBlock, sys.MemoryAvailable());
  if (refusal.empty())
    listed = ListDirectoriesAhead(sys, roots, *dirs, stop);
  else
    notice("not listing the plan's directories ahead: " + refusal);
  std::vector<std::string>().swap(*dirs);
  return listed;
}

}  // namespace oans
