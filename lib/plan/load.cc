#include "lib/plan/load.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lib/format/sector_sum_encoding.h"
#include "lib/plan/anchors.h"
#include "lib/plan/ranges.h"
#include "lib/plan/since.h"
#include "lib/plan/since_listed.h"

namespace oans {
namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;  // FS_NOCOW_FL
constexpr uint64_t kMaxCensusExtent = 128u << 20;  // btrfs's largest data extent
static_assert(kSizePairedKind > uint32_t(kLastSumKind));

class Loader {
 public:
  explicit Loader(PlanState& st) : st_(st) {}
  Status Run();

 private:
  Status Section(const std::string& path, const IndexHeader& h);
  Status Batch(std::vector<FileEntry>& batch);
  Status File(FileEntry& e);
  Status BlockKeys(const FileEntry& e, const Detail& d, uint32_t pair, uint32_t id);
  Status HeaderOnly();
  void LeaveOut(uint64_t records) { st_.stats->since_left_out += records; }

  PlanState& st_;
  std::optional<SinceJoin> since_;      // --since OLD: the join with OLD's files
  std::optional<ListedChanges> listed_;  // or the index's own list of its changes
  std::map<std::string, uint32_t> fs_index_;    // uuid/subvolume -> plan filesystem
  std::map<std::string, uint32_t> pair_index_;  // uuid -> pairing id
  // With --same-owner: (pairing base, uid) -> the base that owner's files pair under.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> owner_bases_;
  // By filesystem position in the current section: plan filesystem, pairing id,
  // identity id (FilesystemIds).
  std::vector<uint32_t> remap_, pairs_of_section_, ids_of_section_;
  uint64_t loaded_ = 0, loaded_bytes_ = 0;
  uint64_t listed_seen_ = 0;  // records of files the list names, as loaded
};

// A new index section (an index, or a part of a concatenated one): its header.
Status Loader::Section(const std::string& path, const IndexHeader& h) {
  PlanHeader& header = st_.header;
  if (st_.o.same_owner && !h.owners)
    return Status::Invalid(path + " records no file owners (made by an older oans); scan again to plan with "
                           "--same-owner");
  st_.spinning |= h.spinning;
  if (header.block_size == 0 || header.indexes.empty()) header.block_size = h.block_size;
  if (h.block_size != header.block_size)
    return Status::Invalid(path + " was scanned with --block-size " + std::to_string(h.block_size) +
                           " but another index with " + std::to_string(header.block_size) +
                           "; scan them with the same block size");
  for (const auto& root : h.roots)
    if (std::find(header.roots.begin(), header.roots.end(), root) == header.roots.end()) header.roots.push_back(root);
  ++st_.sections;
  remap_.clear();
  pairs_of_section_.clear();
  for (const auto& f : h.filesystems) {
    auto it = fs_index_.find(f.Key());
    if (it == fs_index_.end()) {
      header.filesystems.push_back(f);
      it = fs_index_.emplace(f.Key(), uint32_t(header.filesystems.size() - 1)).first;
    }
    remap_.push_back(it->second);
    pairs_of_section_.push_back(pair_index_.emplace(f.uuid, uint32_t(pair_index_.size())).first->second);
    const size_t n = header.filesystems.size();
    st_.fs_uuid.resize(n), st_.subvolumes.resize(n), st_.max_ino.resize(n);
    st_.fs_uuid[it->second] = pairs_of_section_.back();
    if (h.refs_known && !h.subvolumes.empty()) st_.subvolumes[it->second] = h.subvolumes[remap_.size() - 1];
  }
  ids_of_section_ = st_.fs_ids.Of(h.filesystems);
  if (std::find(header.indexes.begin(), header.indexes.end(), path) == header.indexes.end())
    header.indexes.push_back(path);
  return Status::Ok();
}

// The block keys of a file: every whole block whose first and last byte are written.
Status Loader::BlockKeys(const FileEntry& e, const Detail& d, uint32_t pair, uint32_t id) {
  const uint64_t bs = st_.header.block_size;
  const uint64_t full = d.size / bs;
  for (uint64_t b = 0; b < full && b < e.block_hashes.size(); ++b) {
    const uint64_t at = b * bs, last = at + bs - 1;
    if (!Written(d.extents, at) || !Written(d.extents, last)) continue;  // nothing to share
    OANS_RETURN_IF_ERROR(st_.blocks.Add(
        {e.block_hashes[b], pair, id, uint32_t(b), 0, PhysicalAt(d.extents, at), PhysicalAt(d.extents, last)}));
  }
  return Status::Ok();
}

Status Loader::File(FileEntry& e) {
  if (!e.size_paired && (!e.error.empty() || !e.hashed)) {
    // Hashed false without an error: left unread by a scan, its size unique. Never paired.
    (e.error.empty() ? st_.stats->skipped_unread : st_.stats->skipped_errors)++;
    return Status::Ok();
  }
  for (const auto& x : e.extents)
    if (x.flags & kExtentInline) {
      st_.stats->skipped_inline++;
      return Status::Ok();
    }
  if (e.size_paired) st_.stats->size_paired++;
  Detail d;
  d.fs = remap_[e.fs];
  d.dev = e.dev;  // written to the plan as it was; never used for identity
  d.ino = e.ino;
  d.size = e.size;
  d.mtime_ns = e.mtime_ns;
  d.nlink = e.nlink;
  d.extents = std::move(e.extents);
  d.unread = e.size_paired;
  st_.max_ino[d.fs] = std::max(st_.max_ino[d.fs], d.ino);
  std::sort(d.extents.begin(), d.extents.end(),
            [](const FiemapExtent& a, const FiemapExtent& b) { return a.logical < b.logical; });
  OANS_ASSIGN_OR_RETURN(auto id, st_.details.Add(d, e.path, e.other_paths));
  // btrfs refuses to share between nodatacow and ordinary files: never pair them. Keys
  // pair only with keys of the same kind: the kind is part of the pairing.
  uint32_t base = pairs_of_section_[e.fs] * 2 + ((e.inode_flags & kNoCowFlag) ? 1 : 0);
  if (st_.o.same_owner) base = owner_bases_.emplace(std::make_pair(base, e.uid), uint32_t(owner_bases_.size())).first->second;
  // Files paired by size alone have no keys: they group by size, apart from keyed files.
  const uint32_t pair = base * kKeyKinds + (e.size_paired ? kSizePairedKind : e.key_kind);
  st_.changed.push_back(!listed_ || listed_->Changed(e.fs, e.ino));
  if (since_) OANS_RETURN_IF_ERROR(since_->AddNew(ids_of_section_[e.fs], e.ino, id, FileIdentity::Of(e)));
  OANS_RETURN_IF_ERROR(st_.whole.Add({pair, id, d.size, e.hash, LayoutOf(d.extents)}));
  // The same inode may come again, in this section too (a root given twice to an older
  // scan, a crafted or concatenated index): group.h keeps one record of it.
  OANS_RETURN_IF_ERROR(st_.inodes.Add({d.ino, d.fs, id}));
  const bool anchors = st_.o.blocks && !e.sector_sums.empty() && e.sum_kind != 0;
  if (anchors) {
    OANS_RETURN_IF_ERROR(st_.AddSums(id, e.sector_sums));
    OANS_RETURN_IF_ERROR(AddAnchors(st_, e.sector_sums, base * kKeyKinds + e.sum_kind, id));
  } else if (st_.o.blocks) {
    OANS_RETURN_IF_ERROR(BlockKeys(e, d, pair, id));
  }
  if (st_.details.size() == UINT32_MAX) return Status::Invalid("more than 4 billion files in one plan");
  return Status::Ok();
}

// With --since OLD and one index: both headers, read once.
struct SinceHeaders {
  IndexHeader old, now;
};
std::optional<SinceHeaders> ReadSinceHeaders(const PlanOptions& o) {
  if (o.since.empty() || o.indexes.size() != 1) return std::nullopt;
  auto old = ReadIndexHeader(o.since);
  auto now = ReadIndexHeader(o.indexes[0]);
  if (!old.ok() || !now.ok()) return std::nullopt;  // the reads that follow say what is wrong
  return SinceHeaders{std::move(*old), std::move(*now)};
}

// Only the header of the one index, which holds nothing new since --since.
Status Loader::HeaderOnly() {
  st_.stats->unchanged_since = true;
  st_.observer->Notice(st_.o.indexes[0] + " holds exactly what " + st_.o.since +
                       " held (btrfs reported no change): nothing new to plan");
  Status header;
  (void)ReadIndex(
      st_.o.indexes[0], IndexReadOptions{},
      [&](const IndexHeader& h) {
        header = Section(st_.o.indexes[0], h);
        return Status::Interrupted("the header is read");
      },
      [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
  OANS_RETURN_IF_ERROR(header);
  st_.stats->filesystems = pair_index_.size();
  return Status::Ok();
}

Status Loader::Batch(std::vector<FileEntry>& batch) {
  OANS_RETURN_IF_ERROR(st_.CheckStop());
  loaded_ += batch.size();
  for (const auto& e : batch) loaded_bytes_ += e.size;
  st_.observer->Progress({"load", loaded_bytes_, 0, loaded_, 0});
  for (auto& e : batch) {
    if (listed_ && !listed_->Wanted(e)) {
      LeaveOut(1);
      continue;
    }
    if (listed_ && listed_->Changed(e.fs, e.ino)) {
      if (!listed_->SameAsRead(e))
        return Status::Corrupt(st_.o.indexes[0] + " is damaged: the record of inode " + std::to_string(e.ino) +
                               " is not the one its header's list of changes points to");
      listed_seen_++;
    }
    OANS_RETURN_IF_ERROR(File(e));
  }
  return Status::Ok();
}

Status Loader::Run() {
  const auto since = ReadSinceHeaders(st_.o);
  // Made from --since OLD by a scan that followed btrfs changes and found none: no file
  // is new or changed since OLD.
  if (since && since->now.same_as_followed && since->now.FollowedFrom(since->old)) return HeaderOnly();
  if (since && !st_.o.since_join) listed_ = ListedChanges::Of(st_.o, since->old, since->now);
  if (listed_) {
    std::string why_not;
    OANS_RETURN_IF_ERROR(listed_->ReadChanged(st_.o.stop, &why_not));
    if (!why_not.empty()) {
      st_.observer->Notice("warning: " + why_not + "; joining it with " + st_.o.since + " instead");
      listed_.reset();
    }
  }
  if (listed_) {
    st_.stats->since_listed = true;
  } else if (!st_.o.since.empty()) {
    since_.emplace(st_.dir, st_.budget[Use::kSince], st_.o.stop);
    bool truncated = false;
    OANS_RETURN_IF_ERROR(since_->LoadOld(st_.o.since, &st_.fs_ids, &truncated));
    st_.stats->since_truncated = truncated;
    if (truncated) st_.observer->Notice("warning: " + st_.o.since + " is incomplete; files missing from it count as new");
  }
  IndexReadOptions ro;
  std::string reading;  // the index being read
  // The census of data extents (space.h), where the scan made one.
  ro.on_extents = [&](const IndexHeader& h, const std::vector<IndexExtent>& ext) {
    if (!h.refs_known) return Status::Ok();
    for (const auto& e : ext) {
      // A btrfs data extent is at most 128 MiB and has a reference.
      if (e.disk_bytes == 0 || e.disk_bytes > kMaxCensusExtent || e.refs == 0 || e.ro_refs > e.refs)
        return Status::Corrupt(reading + " is damaged: its census lists an extent at " + std::to_string(e.bytenr) +
                               " of " + std::to_string(e.disk_bytes) + " bytes with " + std::to_string(e.refs) +
                               " references (" + std::to_string(e.ro_refs) + " read-only); scan again");
      st_.census.push_back({pairs_of_section_[e.fs], e.bytenr, e.disk_bytes, e.refs, e.ro_refs});
    }
    return Status::Ok();
  };
  if (listed_) {
    // A batch with no file to take is passed by undecoded (its records checked in place).
    ro.keep_encoded = [&](const IndexHeader&, const BatchView& v) { return !listed_->AnyWanted(v); };
    ro.on_encoded = [&](const IndexHeader&, const IndexTotals& counted) {
      loaded_ += counted.records;
      loaded_bytes_ += counted.bytes;
      LeaveOut(counted.records);
      return st_.CheckStop();
    };
  }
  for (const auto& path : st_.o.indexes) {
    reading = path;
    auto r = ReadIndex(
        path, ro,
        [&](const IndexHeader& h) -> Status {
          if (listed_ && (st_.sections > 0 || h.created_ns != listed_->created_ns()))
            return Status::Corrupt(path + " changed while it was read");
          return Section(path, h);
        },
        [&](const IndexHeader&, std::vector<FileEntry>& batch) { return Batch(batch); });
    if (!r.ok()) return r.status();
  }
  st_.stats->filesystems = pair_index_.size();
  if (listed_ && listed_seen_ != listed_->listed())
    return Status::Corrupt(st_.o.indexes[0] + " is damaged: its header lists " + std::to_string(listed_->listed()) +
                           " changed files, but " + std::to_string(listed_seen_) + " of its records are of them");
  if (since_) OANS_RETURN_IF_ERROR(since_->MarkUnchanged(&st_.changed));
  const size_t n = st_.details.size();
  st_.dropped.assign(n, false);
  st_.is_dest.assign(n, false);
  st_.op_files.assign(n, false);
  st_.partial_dest.assign(n, false);
  return Status::Ok();
}

}  // namespace

Status LoadIndexes(PlanState& st) { return Loader(st).Run(); }

}  // namespace oans
