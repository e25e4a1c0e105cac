#include "lib/scan/previous.h"

#include <algorithm>
#include <cstring>

namespace oans {
namespace {

std::vector<uint32_t> SumsOf(const std::string& sums) {
  std::vector<uint32_t> out(sums.size() / 4);
  std::memcpy(out.data(), sums.data(), out.size() * 4);
  return out;
}

}  // namespace

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
          if (!f.hashed) continue;
          if (other_kind && h.filesystems[f.fs].type == "btrfs") {
            if (!said)
              observer->Notice(path + ": its keys of files on btrfs were made from " +
                               (h.read_data ? "file data (--read-data, or an older oans)" : "btrfs checksums") +
                               ": those files are hashed again");
            said = true;
            continue;
          }
          Rec rec;
          rec.fs = fs_of[f.fs];
          rec.ino = f.ino;
          rec.id = FileIdentity::Of(f);
          rec.hash = f.hash;
          rec.inode_flags = f.inode_flags;
          rec.inline_only = !f.extents.empty();
          rec.mapped = !f.extents.empty();
          for (const auto& x : f.extents) {
            if (!(x.flags & kExtentInline)) rec.inline_only = false;
            if (x.flags & (kExtentDelalloc | kExtentUnknown)) rec.mapped = false;
          }
          rec.first_extent = extents_.Append(f.extents);
          rec.extents = uint32_t(f.extents.size());
          rec.first_block = blocks_.Append(f.block_hashes);
          rec.blocks = uint32_t(f.block_hashes.size());
          rec.sum_kind = f.sum_kind;  // the keys' kind travels with them
          rec.key_kind = f.key_kind;
          rec.first_sum = sums_.Append(SumsOf(f.sector_sums));
          rec.sums = uint32_t(f.sector_sums.size() / 4);
          keys_.push_back({rec.ino, rec.fs, uint32_t(recs_.size())});
          recs_.push_back(rec);
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
  // Records stay where they were read; small keys are sorted. Later records of the
  // same inode win, as they would in a map.
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
    auto lo = std::lower_bound(keys_.begin(), keys_.end(), Key{0, f->second, 0});
    auto hi = std::lower_bound(keys_.begin(), keys_.end(), Key{0, f->second + 1, 0});
    const size_t count = size_t(hi - lo);
    for (int k = 1; k < n && count; ++k) {
      uint64_t at = lo[long(count * size_t(k) / size_t(n))].ino;
      if (at > b.back() && at <= last) b.push_back(at);
    }
  }
  b.push_back(last + 1);
  return b;
}

bool PreviousIndex::Reuse(const std::string& fs_key, FileEntry* e, bool unopened, bool extents_unchanged) const {
  const Rec* it = Find(fs_key, e->ino);
  if (!it || !FileIdentity::Of(*e).HashesStillValid(it->id)) return false;
  if (unopened) {
    if (!it->inline_only && !(extents_unchanged && it->mapped)) return false;
    const FiemapExtent* x = extents_.Get(it->first_extent);
    e->extents.assign(x, x + it->extents);
    e->inode_flags = it->inode_flags;
  }
  e->hash = it->hash;
  const Hash128* b = blocks_.Get(it->first_block);
  e->block_hashes.assign(b, b + it->blocks);
  e->sum_kind = it->sum_kind;
  e->key_kind = it->key_kind;
  e->sector_sums.assign(reinterpret_cast<const char*>(sums_.Get(it->first_sum)), size_t(it->sums) * 4);
  e->hashed = true;
  e->reused = true;
  return true;
}

const PreviousIndex::Rec* PreviousIndex::Find(const std::string& fs_key, uint64_t ino) const {
  auto f = fs_ids_.find(fs_key);
  if (f == fs_ids_.end()) return nullptr;
  const Key key{ino, f->second, 0};
  auto k = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (k == keys_.end() || k->fs != key.fs || k->ino != key.ino) return nullptr;
  return &recs_[k->at];
}

}  // namespace oans
