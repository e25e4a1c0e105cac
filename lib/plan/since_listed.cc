#include "lib/plan/since_listed.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "lib/base/units.h"
#include "lib/plan/anchors.h"
#include "lib/plan/budget.h"
#include "lib/plan/ranges.h"

namespace oans {
namespace {

constexpr uint64_t kBytesPerKey = 48;  // an unordered_set node and its bucket, about

Hash128 HashAt(std::string_view blocks, size_t j) {
  Hash128 h;
  std::memcpy(&h.hi, blocks.data() + 16 * j, 8);
  std::memcpy(&h.lo, blocks.data() + 16 * j + 8, 8);
  return h;
}

std::string_view ViewOf(const std::string& s) { return {s.data(), s.size()}; }

}  // namespace

size_t ListedChanges::Seeded::operator()(const InodeKey& k) const {
  const uint64_t v[2] = {k.first, k.second};
  return XXH3_64bits_withSeed(v, sizeof v, seed);
}
size_t ListedChanges::Seeded::operator()(const Hash128& h) const {
  const uint64_t v[2] = {h.hi, h.lo};
  return XXH3_64bits_withSeed(v, sizeof v, seed);
}
size_t ListedChanges::Seeded::operator()(uint64_t v) const { return XXH3_64bits_withSeed(&v, sizeof v, seed); }

ListedChanges::ListedChanges(uint64_t seed)
    : changed_(0, Seeded{seed}), whole_(0, Seeded{seed}), blocks_(0, Seeded{seed}), anchors_(0, Seeded{seed}) {}

std::optional<ListedChanges> ListedChanges::Of(const PlanOptions& o, const IndexHeader& old, const IndexHeader& now) {
  if (o.indexes.size() != 1 || o.indexes[0] == "-" || !now.changed_known || !now.FollowedFrom(old))
    return std::nullopt;
  std::random_device rd;
  ListedChanges l((uint64_t(rd()) << 32) ^ rd());
  l.path_ = o.indexes[0];
  l.since_ = o.since;
  l.created_ns_ = now.created_ns;
  l.changed_at_ = now.changed_at;
  l.block_size_ = now.block_size;
  l.budget_ = MemoryBudget(o.memory)[Use::kSince];
  l.blocks_wanted_ = o.blocks;
  for (const auto& [fs, ino] : now.changed_files) l.changed_.insert(Key(fs, ino));
  return l;
}

// The keys the load makes of a changed file (load.cc: File, BlockKeys, AddAnchors).
void ListedChanges::Keep(const FileEntry& e) {
  if (!e.hashed || !e.error.empty()) return;
  whole_.insert(e.hash);
  if (!blocks_wanted_) return;
  if (!e.sector_sums.empty() && e.sum_kind != 0) {
    const std::string_view sums = ViewOf(e.sector_sums);
    uint64_t h = 0;
    for (size_t i = 0; i < sums.size() / 4; ++i)
      if (AnchorAt(sums, i, &h)) anchors_.insert(h);
    return;
  }
  std::vector<FiemapExtent> extents = e.extents;
  std::sort(extents.begin(), extents.end(),
            [](const FiemapExtent& a, const FiemapExtent& b) { return a.logical < b.logical; });
  for (uint64_t b = 0; b < e.size / block_size_ && b < e.block_hashes.size(); ++b)
    if (Written(extents, b * block_size_) && Written(extents, (b + 1) * block_size_ - 1))
      blocks_.insert(e.block_hashes[b]);
}

Status ListedChanges::ReadChanged(const std::atomic<bool>* stop, std::string* why_not) {
  std::unordered_set<InodeKey, Seeded> found(0, changed_.hash_function());
  bool several = false;
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
        if ((changed_.size() + whole_.size() + blocks_.size() + anchors_.size()) * kBytesPerKey > budget_)
          return Status::Invalid("the keys of its " + std::to_string(changed_.size()) +
                                 " changed files do not fit the " + FormatSize(budget_) + " of --memory kept for them");
        return Status::Ok();
      },
      &several);
  if (s.code() == Status::Code::kInterrupted) return s;
  if (!s.ok()) *why_not = path_ + ": its list of changes since " + since_ + " cannot be used (" + s.message() + ")";
  else if (several) *why_not = path_ + " holds several indexes; the changes its first one lists say nothing of the others";
  else if (found.size() != changed_.size())
    *why_not = path_ + " is damaged: its header lists " + std::to_string(changed_.size()) + " files changed since " +
               since_ + ", but only " + std::to_string(found.size()) + " are where it says";
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
  if (!blocks_.empty())
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
