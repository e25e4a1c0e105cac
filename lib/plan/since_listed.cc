#include "lib/plan/since_listed.h"

#include <cstring>

#include "lib/plan/anchors.h"

namespace oans {
namespace {

Hash128 HashAt(std::string_view blocks, size_t j) {
  Hash128 h;
  std::memcpy(&h.hi, blocks.data() + 16 * j, 8);
  std::memcpy(&h.lo, blocks.data() + 16 * j + 8, 8);
  return h;
}

std::string_view ViewOf(const std::string& s) { return {s.data(), s.size()}; }

}  // namespace

std::optional<ListedChanges> ListedChanges::Of(const PlanOptions& o) {
  if (o.since.empty() || o.indexes.size() != 1 || o.indexes[0] == "-") return std::nullopt;
  auto old = ReadIndexHeader(o.since);
  auto now = ReadIndexHeader(o.indexes[0]);
  if (!old.ok() || !now.ok() || !now->changed_known || now->followed_from == 0 ||
      now->followed_from != old->created_ns || now->roots != old->roots || now->hostname != old->hostname)
    return std::nullopt;
  ListedChanges l;
  l.path_ = o.indexes[0];
  l.since_ = o.since;
  l.created_ns_ = now->created_ns;
  l.changed_at_ = now->changed_at;
  for (const auto& [fs, ino] : now->changed_files) l.changed_.insert(Key(fs, ino));
  return l;
}

void ListedChanges::Keep(const FileEntry& e) {
  if (!e.hashed) return;
  whole_.insert(e.hash);
  for (const auto& b : e.block_hashes) blocks_.insert(b);
  const std::string_view sums = ViewOf(e.sector_sums);
  uint64_t h = 0;
  for (size_t i = 0; i < sums.size() / 4; ++i)
    if (AnchorAt(sums, i, &h)) anchors_.insert(h);
}

Status ListedChanges::ReadChanged(const std::atomic<bool>* stop) {
  std::unordered_set<std::pair<uint32_t, uint64_t>, PairHash> found;
  Status s = ReadIndexTail(
      path_, changed_at_,
      [&](const IndexHeader& h) {
        if (h.created_ns != created_ns_) return Status::Corrupt(path_ + " changed while it was read");
        return Status::Ok();
      },
      [&](const IndexHeader&, std::vector<FileEntry>& batch) {
        if (stop && stop->load(std::memory_order_relaxed)) return Status::Interrupted("stopped by a signal");
        for (const auto& e : batch)
          if (Changed(e.fs, e.ino)) {
            found.insert(Key(e.fs, e.ino));
            Keep(e);
          }
        return Status::Ok();
      });
  if (!s.ok()) return s.Prepend("--since " + since_ + " from the changes " + path_ + " lists");
  if (found.size() != changed_.size())
    return Status::Corrupt(path_ + " is damaged: its header lists " + std::to_string(changed_.size()) +
                           " files changed since " + since_ + ", but only " + std::to_string(found.size()) +
                           " are where it says; scan again");
  return Status::Ok();
}

bool ListedChanges::Shares(bool hashed, const Hash128& hash, std::string_view blocks, std::string_view sums) const {
  if (!hashed) return false;
  if (whole_.count(hash)) return true;
  if (!blocks_.empty())
    for (size_t j = 0; j < blocks.size() / 16; ++j)
      if (blocks_.count(HashAt(blocks, j))) return true;
  uint64_t h = 0;
  if (!anchors_.empty())
    for (size_t i = 0; i < sums.size() / 4; ++i)
      if (AnchorAt(sums, i, &h) && anchors_.count(h)) return true;
  return false;
}

bool ListedChanges::Wanted(const FileEntry& e) const {
  if (Changed(e.fs, e.ino)) return true;
  if (!e.hashed) return false;
  for (const auto& b : e.block_hashes)
    if (blocks_.count(b)) return true;
  return Shares(true, e.hash, {}, ViewOf(e.sector_sums));
}

bool ListedChanges::AnyWanted(const BatchView& v) const {
  for (size_t i = 0; i < v.size(); ++i)
    if (Changed(v.fs(i), v.ino(i)) || Shares(v.hashed(i), v.hash(i), v.block_hashes(i), v.sector_sums(i)))
      return true;
  return false;
}

}  // namespace oans
