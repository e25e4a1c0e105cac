#include "lib/scan/previous.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

namespace oans {
namespace {

// A record in the store: this, then its extents, block hashes and sector sums as they
// are in memory (the store is this process's own unnamed file, read back by it alone).
struct Fixed {
  FileIdentity id;
  Hash128 hash;
  uint32_t inode_flags = 0, extents = 0, blocks = 0, sums = 0;
  uint8_t sum_kind = 0, key_kind = 0;  // FileEntry's: the keys' kind travels with them
};
static_assert(std::is_trivially_copyable_v<Fixed> && std::is_trivially_copyable_v<FiemapExtent> &&
              std::is_trivially_copyable_v<Hash128>);

template <typename T>
void Put(std::string* out, const T* p, size_t n) {
  if (n) out->append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

template <typename T>
const char* Take(const char* p, uint32_t n, std::vector<T>* out) {
  out->resize(n);
  if (n) std::memcpy(out->data(), p, size_t(n) * sizeof(T));
  return p + size_t(n) * sizeof(T);
}

}  // namespace

PreviousIndex::PreviousIndex(const std::string& temp_dir, uint64_t memory) : store_(TempDirectory(temp_dir), memory) {}

Status PreviousIndex::Add(uint32_t fs, const FileEntry& f) {
  Fixed x;
  std::memset(static_cast<void*>(&x), 0, sizeof x);  // no stray padding bytes in the file
  x.id = FileIdentity::Of(f);
  x.hash = f.hash;
  x.inode_flags = f.inode_flags;
  x.extents = uint32_t(f.extents.size());
  x.blocks = uint32_t(f.block_hashes.size());
  x.sums = uint32_t(f.sector_sums.size() / 4);
  x.sum_kind = f.sum_kind;
  x.key_kind = f.key_kind;
  uint8_t flags = f.extents.empty() ? 0 : kInlineOnly | kMapped;
  for (const auto& e : f.extents) {
    if (!(e.flags & kExtentInline)) flags &= uint8_t(~kInlineOnly);
    if (e.flags & (kExtentDelalloc | kExtentUnknown)) flags &= uint8_t(~kMapped);
  }
  std::string rec;
  rec.reserve(sizeof x + f.extents.size() * sizeof(FiemapExtent) + f.block_hashes.size() * sizeof(Hash128) +
              size_t(x.sums) * 4);
  Put(&rec, &x, 1);
  Put(&rec, f.extents.data(), f.extents.size());
  Put(&rec, f.block_hashes.data(), f.block_hashes.size());
  rec.append(f.sector_sums, 0, size_t(x.sums) * 4);
  OANS_ASSIGN_OR_RETURN(uint64_t at, store_.Add(rec));
  keys_.push_back({f.ino, at, fs, flags});
  return Status::Ok();
}

Status PreviousIndex::AddPaired(uint32_t fs, const FileEntry& f) {
  Fixed x;
  std::memset(static_cast<void*>(&x), 0, sizeof x);
  x.id = FileIdentity::Of(f);
  std::string rec;
  Put(&rec, &x, 1);
  OANS_ASSIGN_OR_RETURN(uint64_t at, store_.Add(rec));
  keys_.push_back({f.ino, at, fs, kPaired});
  return Status::Ok();
}

Status PreviousIndex::Load(const std::string& path, uint32_t block_size, bool read_data, ScanStats* stats,
                           Observer* observer) {
  bool said = false;
  IndexReadOptions ro;
  ro.allow_truncated = true;
  std::vector<uint32_t> fs_of;  // the header's filesystems -> FsId
  bool header_seen = false;
  auto r = ReadIndex(
      path, ro,
      [&](const IndexHeader& h) {
        header_seen = true;
        fs_of.clear();
        for (const auto& f : h.filesystems) {
          fs_of.push_back(FsId(f.Key()));
          // Several sections: the oldest generation covers the records of all of them;
          // a subvolume unknown to one section, or another one, leaves nothing known.
          auto [it, added] = subvolumes_.emplace(f.Key(), Subvolume{f.subvolume_uuid, f.generation});
          if (!added) {
            if (it->second.uuid != f.subvolume_uuid) it->second.generation = 0;
            it->second.generation = std::min(it->second.generation, f.generation);
          }
        }
        return Status::Ok();
      },
      [&](const IndexHeader& h, std::vector<FileEntry>& batch) {
        if (h.block_size != block_size) return Status::Ok();  // other block size: nothing reusable
        // On btrfs, keys come from its checksums unless --read-data asks for keys of
        // data: keys of the other kind would never pair with the new ones.
        const bool other_kind = h.read_data != read_data;
        for (auto& f : batch) {
          // A pair holds no hash that a racy change could make stale: kept as it is.
          if (f.size_paired && f.error.empty()) {
            OANS_RETURN_IF_ERROR(AddPaired(fs_of[f.fs], f));
            continue;
          }
          if (!f.hashed || !Settled(f, h.created_ns)) continue;  // a racy record is hashed again
          if (other_kind && h.filesystems[f.fs].type == "btrfs") {
            if (!said)
              observer->Notice(path + ": its keys of files on btrfs were made from " +
                               (h.read_data ? "file data (--read-data, or an older oans)" : "btrfs checksums") +
                               ": those files are hashed again");
            said = true;
            continue;
          }
          OANS_RETURN_IF_ERROR(Add(fs_of[f.fs], f));
        }
        return Status::Ok();
      });
  if (!r.ok()) {
    // Damage in an index (after its header); not an index at all is another error.
    if (r.status().code() != Status::Code::kCorrupt || !header_seen)
      return r.status().Prepend("--previous");
    damage_ = r.status().message();
    return Status::Corrupt("--previous: " + damage_ +
                           ". Its hashes cannot be trusted; remove it, or run with --previous-damaged=rescan to "
                           "scan every file again without it");
  }
  // Records stay where they were stored; the small keys are sorted. Later records of
  // the same inode win, as they would in a map.
  std::sort(keys_.begin(), keys_.end());
  size_t kept = 0;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (kept && keys_[kept - 1].fs == keys_[i].fs && keys_[kept - 1].ino == keys_[i].ino) keys_[kept - 1] = keys_[i];
    else keys_[kept++] = keys_[i];
  }
  keys_.resize(kept);
  keys_.shrink_to_fit();
  stats->previous_files = keys_.size();
  stats->previous_records = r->totals.records;
  stats->previous_bytes = r->totals.bytes;
  stats->previous_truncated = r->truncated;
  if (r->truncated)
    observer->Notice("warning: " + path + " is incomplete (an interrupted scan, cut at byte " +
                     std::to_string(r->cut_at) + "); reusing the " + std::to_string(keys_.size()) +
                     " files of its complete batches");
  return Status::Ok();
}

std::vector<uint64_t> PreviousIndex::InodeSlices(const std::string& fs_key, int n, uint64_t first, uint64_t last) const {
  std::vector<uint64_t> b{first};
  auto f = fs_ids_.find(fs_key);
  if (f != fs_ids_.end()) {
    // keys_ is sorted by (fs, ino): this filesystem's records are one sorted run.
    auto lo = std::lower_bound(keys_.begin(), keys_.end(), Key{0, 0, f->second, 0});
    auto hi = std::lower_bound(keys_.begin(), keys_.end(), Key{0, 0, f->second + 1, 0});
    const size_t count = size_t(hi - lo);
    for (int k = 1; k < n && count; ++k) {
      uint64_t at = lo[long(count * size_t(k) / size_t(n))].ino;
      if (at > b.back() && at <= last) b.push_back(at);
    }
  }
  b.push_back(last + 1);
  return b;
}

bool PreviousIndex::ReadFixed(const Key& k, std::string* rec) const {
  return store_.Get(k.at, rec).ok() && rec->size() >= sizeof(Fixed);
}

bool PreviousIndex::FixedOf(const Key& k, std::string* rec) const {
  // The store is this scan's own: a record it cannot give back is a failing temporary
  // file; the file is then read as if it had no record, and RunScan says how many were.
  if (ReadFixed(k, rec)) return true;
  unreadable_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool PreviousIndex::HoldsUnchanged(const std::string& fs_key, const FileEntry& e) const {
  const Key* k = Find(fs_key, e.ino);
  std::string rec;
  if (!k) return false;
  if (!ReadFixed(*k, &rec)) return true;  // read then, and counted by Reuse
  Fixed x;
  std::memcpy(&x, rec.data(), sizeof x);
  return FileIdentity::Of(e).HashesStillValid(x.id);
}

bool PreviousIndex::Reuse(const std::string& fs_key, FileEntry* e, bool unopened, bool extents_unchanged) const {
  const Key* k = Find(fs_key, e->ino);
  if (!k || (k->flags & kPaired)) return false;
  if (unopened && !(k->flags & kInlineOnly) && !(extents_unchanged && (k->flags & kMapped))) return false;
  std::string rec;
  Fixed x;
  if (!FixedOf(*k, &rec)) return false;
  std::memcpy(&x, rec.data(), sizeof x);
  const size_t need = sizeof x + size_t(x.extents) * sizeof(FiemapExtent) + size_t(x.blocks) * sizeof(Hash128) +
                      size_t(x.sums) * 4;
  if (rec.size() != need || !FileIdentity::Of(*e).HashesStillValid(x.id)) return false;
  const char* p = rec.data() + sizeof x;
  if (unopened) {
    Take(p, x.extents, &e->extents);
    e->inode_flags = x.inode_flags;
  }
  p += size_t(x.extents) * sizeof(FiemapExtent);
  e->hash = x.hash;
  p = Take(p, x.blocks, &e->block_hashes);
  e->sum_kind = x.sum_kind;
  e->key_kind = x.key_kind;
  e->sector_sums.assign(p, size_t(x.sums) * 4);
  e->hashed = true;
  e->reused = true;
  return true;
}

const PreviousIndex::Key* PreviousIndex::Find(const std::string& fs_key, uint64_t ino) const {
  auto f = fs_ids_.find(fs_key);
  if (f == fs_ids_.end()) return nullptr;
  const Key key{ino, 0, f->second, 0};
  auto k = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (k == keys_.end() || k->fs != key.fs || k->ino != key.ino) return nullptr;
  return &*k;
}

// --previous, loaded; empty without it, or when it is damaged and the options say to
// rescan then.
Status LoadPrevious(const ScanOptions& o, Observer* observer, ScanStats* stats,
                    std::unique_ptr<PreviousIndex>* loaded) {
  *loaded = std::make_unique<PreviousIndex>(o.temp_dir, o.memory);
  if (o.previous.empty()) return Status::Ok();
  Status s = (*loaded)->Load(o.previous, o.block_size, o.read_data, stats, observer);
  if (!s.ok() && !(!(*loaded)->damage().empty() && o.previous_damaged_rescan)) return s;
  if (!s.ok()) {
    observer->Notice("warning: --previous: " + (*loaded)->damage() + "; reusing nothing from it, every file is read");
    *loaded = std::make_unique<PreviousIndex>(o.temp_dir, o.memory);
    stats->previous_files = 0;
    stats->previous_damaged = true;
  }
  return Status::Ok();
}

void PreviousIndex::WarnUnreadable(Observer* observer, const std::string& temp_dir) const {
  if (uint64_t n = unreadable())
    observer->Notice("warning: " + std::to_string(n) + " records of --previous could not be read back from its "
                     "temporary file in " + TempDirectory(temp_dir) + "; those files were read again (check the "
                     "disk, or give --temp-dir or a larger --memory)");
}

}  // namespace oans
