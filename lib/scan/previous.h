// The previous index (--previous) of a scan, held compact: the records of files it
// hashed (and the identity of those it paired by size), looked up by (filesystem key,
// inode), and the btrfs subvolume generations its headers knew. In memory only a sorted array of 24-byte keys; the records themselves
// (identity, hashes, extents, sector sums) go to a RecordStore, in memory up to
// ScanOptions::memory and then in an unnamed temporary file, read back one record per
// lookup. RunScan loads it once on its own thread, before the walk; after that it is
// read-only and any thread (walkers, pipeline readers, the btrfs change search) may call
// its const members at once. The caller owns it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/base/status.h"
#include "lib/format/index_file.h"
#include "lib/scan/scan.h"

namespace oans {

// The previous index, compact: a sorted array of (filesystem, inode) keys pointing into
// a store of encoded records.
class PreviousIndex {
 public:
  // `temp_dir` ("" = default) and `memory`: where the records go past `memory` bytes.
  explicit PreviousIndex(const std::string& temp_dir = "", uint64_t memory = 512ull << 20);

  // What the previous scan knew of a btrfs subvolume: its generation before any of its
  // files' extents were read.
  struct Subvolume {
    std::string uuid;
    uint64_t generation = 0;
  };

  // Reads the index at `path`: the records of files that were hashed with `block_size`
  // blocks by a scan asked the same of --read-data (IndexHeader::read_data), and what
  // each section's header knew of btrfs subvolumes.
  Status Load(const std::string& path, uint32_t block_size, bool read_data, ScanStats* stats, Observer* observer);

  // After Load failed: the damage found in an index after its header ("" if none).
  const std::string& damage() const { return damage_; }

  // Whether the record of (fs_key, ino), if any, could be finished unopened (see Reuse).
  bool MayFinishUnopened(const std::string& fs_key, uint64_t ino, bool extents_unchanged) const {
    const Key* k = Find(fs_key, ino);
    return k && ((k->flags & kInlineOnly) || (extents_unchanged && (k->flags & kMapped)));
  }

  // Up to n + 1 increasing bounds from `first` to `last` + 1 that cut the inode numbers
  // of the records of filesystem `fs_key` into n slices of about equal count.
  std::vector<uint64_t> InodeSlices(const std::string& fs_key, int n, uint64_t first, uint64_t last) const;

  // The previous scan's view of a btrfs subvolume, or null when it knew no generation.
  const Subvolume* SubvolumeOf(const std::string& fs_key) const {
    auto it = subvolumes_.find(fs_key);
    return it == subvolumes_.end() || it->second.generation == 0 || it->second.uuid.empty() ? nullptr : &it->second;
  }

  // Fills e's hashes when the previous index holds this file unchanged. With
  // `unopened`, e has only been stat'ed: the record's extents and inode flags are taken
  // too, which needs a record holding nothing but inline data (btrfs keeps small files
  // in its metadata; they have nothing to share and cannot change without a new ctime),
  // or `extents_unchanged` (btrfs says the file's metadata has not been written since
  // the previous scan) and a complete extent map in the record.
  bool Reuse(const std::string& fs_key, FileEntry* e, bool unopened = false, bool extents_unchanged = false) const;

  // Whether the previous index holds a record of this file, read or paired by size
  // (FileEntry::size_paired), and the file has not changed since. A whole-files-only
  // scan pairs such a file by size no more: its pair was planned once, or it has keys.
  // A record it cannot give back counts as held: the file is then read, and Reuse counts
  // the record as unreadable, once.
  bool HoldsUnchanged(const std::string& fs_key, const FileEntry& e) const;

  // Whether the records went to the temporary file (more than `memory` bytes of them).
  bool spilled() const { return store_.spilled(); }
  // Lookups whose record could not be read back from that file (its files were read).
  uint64_t unreadable() const { return unreadable_.load(std::memory_order_relaxed); }
  // Says so when records could not be read back (their files were read again).
  void WarnUnreadable(Observer* observer, const std::string& temp_dir) const;

 private:
  static constexpr uint8_t kInlineOnly = 1;  // extents hold inline data only
  static constexpr uint8_t kMapped = 2;      // a complete extent map (no delayed allocation)
  static constexpr uint8_t kPaired = 4;      // left unread, paired by size (its identity only)
  // Sorted by (fs, ino) for lookups; `at` is where the record is in store_ (records are
  // added in the order read, so a later record of an inode has a greater `at`).
  struct Key {
    uint64_t ino = 0, at = 0;
    uint32_t fs = 0;
    uint8_t flags = 0;
    bool operator<(const Key& o) const { return std::tie(fs, ino, at) < std::tie(o.fs, o.ino, o.at); }
  };
  static_assert(sizeof(Key) == 24);
  Status Add(uint32_t fs, const FileEntry& f);
  // A record paired by size: its identity only, flagged kPaired, never reused.
  Status AddPaired(uint32_t fs, const FileEntry& f);
  // The fixed part of k's record; false when it cannot be read back (FixedOf counts it).
  bool ReadFixed(const Key& k, std::string* rec) const;
  bool FixedOf(const Key& k, std::string* rec) const;
  const Key* Find(const std::string& fs_key, uint64_t ino) const;
  uint32_t FsId(const std::string& key) { return fs_ids_.emplace(key, uint32_t(fs_ids_.size())).first->second; }
  std::string damage_;
  std::map<std::string, uint32_t> fs_ids_;
  std::map<std::string, Subvolume> subvolumes_;  // by filesystem key
  std::vector<Key> keys_;
  RecordStore store_;
  mutable std::atomic<uint64_t> unreadable_{0};
};

// --previous, loaded; empty without it, or when it is damaged and the options say to
// rescan then (said once as a warning).
Status LoadPrevious(const ScanOptions& o, Observer* observer, ScanStats* stats, std::unique_ptr<PreviousIndex>* loaded);

}  // namespace oans
