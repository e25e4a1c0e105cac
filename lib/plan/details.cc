#include "lib/plan/details.h"

#include <algorithm>
#include <cstring>

#include "lib/base/extent_code.h"
#include "lib/plan/ranges.h"

namespace oans {

void EncodeDetail(const Detail& d, std::string* out) {
  out->clear();
  PutVarint(out, d.fs);
  PutVarint(out, d.dev);
  PutVarint(out, d.ino);
  PutVarint(out, d.size);
  char mtime[sizeof d.mtime_ns];
  std::memcpy(mtime, &d.mtime_ns, sizeof mtime);
  out->append(mtime, sizeof mtime);
  PutVarint(out, d.path_at);
  PutVarint(out, d.nlink);
  PutVarint(out, d.unread ? 1 : 0);
  PutExtents(out, d.extents);
}

Status DecodeDetail(std::string_view in, Detail* d) {
  CodeReader r(in);
  d->fs = r.Varint32();
  d->dev = r.Varint();
  d->ino = r.Varint();
  d->size = r.Varint();
  r.Bytes(&d->mtime_ns, sizeof d->mtime_ns);
  d->path_at = r.Varint();
  d->nlink = r.Varint32();
  const uint32_t unread = r.Varint32();
  d->unread = unread == 1;
  r.Extents(&d->extents);
  if (!r.ok() || !r.at_end() || unread > 1) return Status::Corrupt("planner: damaged file record in the temporary store");
  d->first_physical = PhysicalAt(d->extents, 0);
  return Status::Ok();
}

// A file's names are stored as one record, separated by NUL (which no path holds).
Result<uint32_t> Details::Add(Detail& d, const std::string& path, const std::vector<std::string>& other_paths) {
  std::string names = path;
  for (const auto& o : other_paths) names.append(1, '\0').append(o);
  OANS_ASSIGN_OR_RETURN(auto p, paths_.Add(names));
  d.path_at = p;
  EncodeDetail(d, &encoded_);
  OANS_ASSIGN_OR_RETURN(auto at, store_.Add(encoded_));
  if (size_ % kStride == 0) offsets_.push_back(at);
  // The per-file state grows with the files: the records get less room.
  if (size_ % 4096 == 0) store_.set_budget(budget_ - std::min(budget_, size_ * kBitsPerFile / 8));
  return uint32_t(size_++);
}

Result<std::shared_ptr<const Detail>> Details::Get(uint32_t id) {
  auto it = cache_.find(id);
  if (it != cache_.end()) return it->second;
  if (cache_.size() >= kCache) cache_.clear();
  if (id >= size_) return Status::Corrupt("planner: no file " + std::to_string(id));
  if (!details_.Find(id, &scratch_)) OANS_RETURN_IF_ERROR(store_.GetAfter(offsets_[id / kStride], id % kStride, &scratch_));
  auto d = std::make_shared<Detail>();
  OANS_RETURN_IF_ERROR(DecodeDetail(scratch_, d.get()));
  cache_.emplace(id, d);
  return std::shared_ptr<const Detail>(d);
}

Result<std::string> Details::Path(uint32_t id) {
  std::string names;
  if (!paths_pre_.Find(id, &names)) {
    OANS_ASSIGN_OR_RETURN(auto d, Get(id));
    OANS_RETURN_IF_ERROR(paths_.Get(d->path_at, &names));
  }
  names.resize(std::min(names.size(), names.find('\0')));
  return names;
}

Result<std::vector<std::string>> Details::Names(uint32_t id) {
  std::string names;
  if (!paths_pre_.Find(id, &names)) {
    OANS_ASSIGN_OR_RETURN(auto d, Get(id));
    OANS_RETURN_IF_ERROR(paths_.Get(d->path_at, &names));
  }
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t end = std::min(names.size(), names.find('\0', at));
    out.push_back(names.substr(at, end - at));
    if (end == names.size()) return out;
    at = end + 1;
  }
}

Status Details::Preload(const std::vector<bool>& needed, uint64_t budget, bool paths, const std::atomic<bool>* stop) {
  cache_.clear();
  details_ = Preloaded();
  paths_pre_ = Preloaded();
  const size_t wanted = size_t(std::count(needed.begin(), needed.end(), true));
  if (wanted == 0) return Status::Ok();
  const bool details = store_.spilled();  // else they are in memory already
  paths = paths && paths_.spilled() && wanted >= kFewPaths;
  if (details) OANS_RETURN_IF_ERROR(details_.Load(store_, needed, paths ? budget / 2 : budget, stop));
  if (paths) OANS_RETURN_IF_ERROR(paths_pre_.Load(paths_, needed, details ? budget / 2 : budget, stop));
  return Status::Ok();
}

Status Details::ForEach(const std::function<Status(uint32_t id, const Detail&)>& visit) const {
  uint32_t id = 0;
  Detail d;
  return store_.ForEach([&](uint64_t, const std::string& record) -> Status {
    OANS_RETURN_IF_ERROR(DecodeDetail(record, &d));
    return visit(id++, d);
  });
}

Status Details::Preloaded::Load(const RecordStore& store, const std::vector<bool>& needed, uint64_t budget,
                                 const std::atomic<bool>* stop) {
  std::string().swap(arena);
  std::vector<std::pair<uint32_t, uint64_t>>().swap(index);
  // Reserved at once: no doubling past the budget.
  // Only the pages written count; the rest stays unmapped.
  arena.reserve(size_t(std::min<uint64_t>(budget, store.bytes())));
  uint32_t id = 0;
  return store.ForEach([&](uint64_t, const std::string& record) -> Status {
    const uint32_t i = id++;
    if (i % 1024 == 0 && stop && stop->load(std::memory_order_relaxed)) return Status::Interrupted("stopped by a signal");
    if (i >= needed.size() || !needed[i]) return Status::Ok();
    const uint64_t index_bytes = 2 * sizeof(index[0]) * (index.size() + 1);  // with its growth
    if (arena.size() + record.size() + sizeof(uint32_t) + index_bytes > budget) return Status::Ok();
    index.push_back({i, arena.size()});
    const uint32_t n = uint32_t(record.size());
    arena.append(reinterpret_cast<const char*>(&n), sizeof n);
    arena.append(record);
    return Status::Ok();
  });
}

bool Details::Preloaded::Find(uint32_t id, std::string* record) const {
  auto it = std::lower_bound(index.begin(), index.end(), std::pair<uint32_t, uint64_t>{id, 0});
  if (it == index.end() || it->first != id) return false;
  uint32_t n = 0;
  std::memcpy(&n, arena.data() + it->second, sizeof n);
  record->assign(arena, size_t(it->second + sizeof n), n);
  return true;
}

}  // namespace oans
