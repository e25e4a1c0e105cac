// The scan: walk the roots, read every file once and write its identity, extent map and
// hashes to an extent index. Stages:
//   identify the roots' filesystems -> choose storage/threads/order (the storage is
//   recorded in the header for the plan's round size; a followed scan with auto keeps
//   the previous index's)
//   -> walk: a file unchanged since --previous whose extents cannot have changed either
//      (btrfs wrote none of its metadata since the previous index's generation, found
//      with one tree search per subvolume) is finished from a stat, unopened; every
//      other file is mapped (FIEMAP) while the walk has it open; an unchanged one is
//      finished there, and in walk order (the SSD default) every file is read and
//      hashed there too, by the walk's threads
//   -> the files kept (disk order on HDD, inode order, and hardlinks, merged into one
//      record) are read in a bounded parallel pipeline -> write.
// Records finished during the walk go to an unnamed temporary spool, copied out after
// the header (which lists the filesystems met). Memory: flat in walk order; in physical
// or inode order the kept list costs about 150 bytes plus the path per file.
// The pieces: previous.h (the --previous index), filesystems.h (the filesystems met and
// btrfs changes), reading.h (storage, threads, order), builder.h (the one code that fills
// a record, for every source), entry.h (a record's identity), sink.h (the walk's spool),
// kept.h (the kept files' pipeline); scan.cc strings them together.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/frame_stream.h"
#include "lib/base/fsinfo.h"
#include "lib/format/index_file.h"
#include "lib/base/observer.h"
#include "lib/base/sys.h"
#include "lib/scan/csum.h"

namespace oans {

enum class ReadOrder { kAuto, kPhysical, kInode, kNone };
enum class PairBySize { kAuto, kAlways, kNever };

// Why a scan given --previous did not follow btrfs changes and walked instead
// (lib/scan/follow.h); kNone when it followed or was not asked to.
enum class NoFollow : uint8_t {
  kNone, kOldIndex, kOtherScan, kRefreshExtents, kMounts, kRoot, kNotBtrfs, kSubvolume, kGeneration, kCommit,
  kTempFile, kSearch, kSubvolumeChanged, kTooManyChanges, kDirectory, kMovedIn, kDamagedIndex, kStopped, kUnreadRecord
};
// "not_btrfs", "too_many_changes"... ("" for kNone), for --json.
const char* NoFollowName(NoFollow k);

struct ScanOptions {
  std::vector<std::string> roots;  // as given: made canonical, each once, by roots.h
  uint32_t block_size = 128 * 1024;
  uint64_t min_size = 0;
  std::vector<std::string> excludes;
  int io_threads = 0;  // 0: from the storage kind
  StorageChoice storage = StorageChoice::kAuto;
  ReadOrder order = ReadOrder::kAuto;
  std::string previous;  // previous index to reuse hashes from ("" = none)
  // A damaged previous index (a frame failing its checksum, a message that does not
  // parse) is refused; with this, it is ignored with a warning and every file is read.
  bool previous_damaged_rescan = false;
  // Map every file again, even those btrfs says have had no metadata written since the
  // previous index's generation (which are otherwise not opened at all).
  bool refresh_extents = false;
  // Read every file's data, even on btrfs where its checksums would do (lib/scan/csum.h).
  bool read_data = false;
  // Only whole files will be shared (hardlinks, or a plan of whole files). Where no
  // btrfs checksums key the files (ext4, XFS, --read-data), a file whose size no other
  // file has is recorded unread (hashed false, no error) and never opened.
  bool whole_files_only = false;
  // Where no btrfs checksums key the files: whether two files of a size met exactly
  // twice are mapped, not read (FileEntry::size_paired; apply's compare reads them).
  // kAuto: with whole_files_only. kAlways pairs outside it too, but only in a scan
  // without --previous: the next scan, given this one's index, reads them and keys their
  // blocks for partial duplicates. Either way the walk keeps every file until it ends.
  PairBySize pair_by_size = PairBySize::kAuto;
  // Count every btrfs data extent's references by LOGICAL_INO_V2, not from its items
  // (lib/btrfs/backrefs.h): a check of the census, set by $OANS_CENSUS_LOOK_UP_ALL.
  bool census_look_up_all = false;
  std::string temp_dir;  // for the spool of records finished during the walk ("" = default)
  // Memory for the --previous index's records; past it they go to an unnamed file in
  // temp_dir (lib/scan/previous.h). Its keys, 24 bytes a file, stay in memory.
  uint64_t memory = 512ull << 20;
  std::vector<std::string> command_line;
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: stop cleanly
};

struct ScanStats {
  uint64_t files = 0;          // records written
  uint64_t bytes = 0;          // their total size
  uint64_t bytes_read = 0;     // data actually read
  uint64_t hashed = 0;         // files keyed anew: read, or from btrfs checksums
  uint64_t reused = 0;         // files whose hashes came from the previous index
  uint64_t unopened = 0;       // of those, finished from a stat alone: extents known unchanged
  uint64_t tree_mapped = 0;    // files mapped and keyed from btrfs's trees, never opened (lib/btrfs/tree_map.h)
  uint64_t tree_ahead_bytes = 0;   // btrfs tree blocks read ahead: on a spinning disk before the walk, and of a followed scan the blocks written since (tree_ahead.h)
  uint64_t tree_ahead_leaves = 0;  // of those, leaves read in disk order
  bool tree_ahead_cut = false;     // the first read-ahead stopped at --memory
  uint64_t tree_ahead_parts = 0;   // a followed scan's: parts of the inode numbers read ahead after it (one --memory each)
  uint64_t leaves_read = 0;           // a followed scan's blocks written since, read from the device by the judge (changed_leaves.h)
  uint64_t leaves_read_bytes = 0;     // bytes those reads took (the leaves, and the gaps read through)
  uint64_t leaves_read_requests = 0;  // reads they took
  uint64_t leaves_searched = 0;       // ranges searched instead: a leaf rewritten since it was laid out
  uint64_t inode_tables_bytes = 0;   // on a spinning disk, XFS inode tables read before the walk (walk_ahead.h)
  uint64_t inode_tables_inodes = 0;  // the inodes in use they held
  uint64_t census_extents = 0;    // btrfs data extents whose references the index lists
  uint64_t census_looked_up = 0;  // of those, counted by LOGICAL_INO_V2, not from their items
  uint64_t errors = 0;         // files recorded with an error
  uint64_t unread = 0;         // files of a unique size recorded unread (whole_files_only)
  uint64_t dirs_in_disk_order = 0;  // directories whose blocks were read in disk order before listing (XFS, HDD)
  uint64_t size_paired = 0;    // files one other shares its size with, mapped, not read (pair_by_size)
  uint64_t hardlinks = 0;      // extra names of inodes already recorded
  uint64_t dirs = 0, skipped_special = 0, skipped_symlinks = 0, skipped_mounts = 0, skipped_small = 0,
           excluded = 0;
  std::vector<uint64_t> exclude_hits;  // entries each --exclude excluded (a walk's; none when followed)
  uint64_t previous_files = 0;
  bool followed = false;        // btrfs changes followed instead of a walk (lib/scan/follow.h)
  NoFollow not_followed = NoFollow::kNone;  // why not, when --previous was given
  uint64_t changed_inodes = 0;  // inodes in tree blocks written since the previous index
  uint64_t quiet_inodes = 0;    // of those, files whose items say what their records say, or all but the extents
  uint64_t judge_passes = 0;    // passes over the previous index that judged them (QuietRecords::PassRoom)
  uint64_t extents_moved = 0;   // of those, files whose extents alone changed (a dedupe)
  uint64_t same_extents = 0;    // of the files reused, those given the hashes of a record with the same extents
  uint64_t previous_records = 0, previous_bytes = 0;  // the previous index's totals (walk estimate)
  bool previous_truncated = false;
  bool previous_damaged = false;  // ignored as damaged (previous_damaged_rescan)
  bool interrupted = false;
  double seconds = 0;  // the tool's wall time, set by it for its summary
  StorageInfo storage;
  int threads = 0;
  ReadOrder order = ReadOrder::kNone;
  ChecksumCounts checksums;  // bytes whose sums came from btrfs checksums; bytes read, by reason
};

// Runs a scan and writes the index to `out` (the caller commits it). When stopped by
// options.stop the index is written without a trailer: readers see it as truncated, and
// --previous can still reuse it.
Status RunScan(Sys& sys, const ScanOptions& options, OutputFile* out, Observer* observer, ScanStats* stats);

const char* ReadOrderName(ReadOrder o);

}  // namespace oans
