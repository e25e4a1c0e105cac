// The previous index (--previous) of a scan, held compact: the records of files it
// hashed, looked up by (filesystem key, inode), and the btrfs subvolume generations its
// headers knew. RunScan loads it once on its own thread, before the walk; after that it
// is read-only and any thread (walkers, pipeline readers, the btrfs change search) may
// call its const members at once. The caller owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/format/index_file.h"
#include "lib/scan/scan.h"

namespace oans {

// The previous index, compact: one sorted array of fixed records and arrays of block
// hashes and extents, looked up by (filesystem key, inode).
class PreviousIndex {
 public:
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
    const Rec* r = Find(fs_key, ino);
    return r && (r->inline_only || (extents_unchanged && r->mapped));
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

 private:
  struct Rec {
    uint32_t fs = 0, blocks = 0;
    uint64_t ino = 0, first_block = 0;
    FileIdentity id;
    Hash128 hash;
    uint64_t first_extent = 0;
    uint32_t inode_flags = 0, extents = 0;
    bool inline_only = false;  // extents hold inline data only
    bool mapped = false;       // a complete extent map (no delayed allocation)
    uint8_t sum_kind = 0, key_kind = 0;  // FileEntry's, with its sector sums in sums_
    uint64_t first_sum = 0;
    uint32_t sums = 0;
  };
  const Rec* Find(const std::string& fs_key, uint64_t ino) const;
  uint32_t FsId(const std::string& key) { return fs_ids_.emplace(key, uint32_t(fs_ids_.size())).first->second; }
  std::string damage_;
  std::map<std::string, uint32_t> fs_ids_;
  std::map<std::string, Subvolume> subvolumes_;  // by filesystem key
  // Sorted by (fs, ino) for lookups; `at` numbers records in the order read.
  struct Key {
    uint64_t ino;
    uint32_t fs, at;
    bool operator<(const Key& o) const { return std::tie(fs, ino, at) < std::tie(o.fs, o.ino, o.at); }
  };
  ChunkedArray<Rec> recs_;  // nothing moves as it grows
  std::vector<Key> keys_;
  RunStore<Hash128> blocks_;
  RunStore<FiemapExtent> extents_;
  RunStore<uint32_t> sums_;
};

}  // namespace oans
