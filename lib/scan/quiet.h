// Inodes that a change search finds but that did not change: after a backup read every
// file, relatime wrote each one's atime, and every tree block of the subvolume was
// written again; after a dedupe, the neighbours of each deduped file share its blocks.
// An inode is quiet when its items say all its previous record says: the same size,
// times, links, owner, flags and extents; a directory, the same times (every system
// call that changes its entries sets them), and then its entries are not held. A ctime nobody can set (a write, a rename, a
// new link or a chmod sets it) then means the same data at the same paths, and the
// record is carried as it was. An inode whose extents alone changed (a dedupe, by oans
// or another tool: FIDEDUPERANGE leaves ctime alone) holds the same data elsewhere: its
// record is carried with the new extents, its keys kept.
// Holds 24 bytes a record of the previous index, and each moved file's new extents. When
// the records take more than the scan's share of memory, they are judged in passes, each
// over a range of inode numbers, the previous index read once a pass.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/btrfs/changes.h"
#include "lib/format/index_file.h"
#include "lib/scan/moved_files.h"

namespace oans {

// What a record says of its inode that the inode's items also say: its stat (size,
// times, links, owner, flags) and its extents, as two digests; 0 for none. Of a
// directory, its times alone (no extents): the same times, the same entries.
struct QuietDigest {
  uint64_t stat = 0, extents = 0;
  static QuietDigest Of(const FileEntry& e);
  static QuietDigest Of(const IndexDir& d);
  // Of a regular file's items (none when they do not map it), or a directory's.
  static QuietDigest Of(const ChangedInode& c);
};

// The previous index's records of the filesystems a change search looks at.
class QuietRecords {
 public:
  // Records of the previous index's filesystem `fs` are wanted.
  void Want(uint32_t fs);
  // Reads the previous index at `path` (its header created at `created_ns`) and keeps
  // the digests of each wanted record that is complete (hashed, no error) and settled
  // (Settled in lib/format/index_file.h: not racy); the others are kept without one (24
  // bytes all the same: an inode recorded twice says nothing certain). One pass: the
  // records of inode numbers from `from` on, of the lowest numbers, as many as `most`
  // bytes hold; *upto is the first number not kept (UINT64_MAX when none was left out),
  // from which the next pass begins. What an earlier pass kept is dropped first. Fails
  // when one number's records alone fill `most`: a damaged index (or as many subvolumes
  // followed as a pass holds records, tens of thousands).
  Status Load(const std::string& path, int64_t created_ns, uint64_t most, uint64_t from, uint64_t* upto);
  // Whether inode `c` of filesystem `fs` says all its record said (true), or all but
  // its extents (true, and its extents are copied into Moved's list). May be
  // called from several threads at once (between Load and Done).
  bool Take(uint32_t fs, ChangedInode& c);
  // Inode numbers that cut the records of `fs` numbered `from` to `upto` - 1 into
  // `parts` runs of about as many (fewer cuts when there are few records): where a judge
  // split in slices cuts.
  std::vector<uint64_t> Splits(uint32_t fs, size_t parts, uint64_t from = 0, uint64_t upto = UINT64_MAX) const;
  // The digests are dropped; the moved extents stay.
  void Done();
  // The new extents of inode `ino` of `fs` when only they changed (after Done); none
  // otherwise.
  std::optional<MovedExtents> Moved(uint32_t fs, uint64_t ino) const;
  bool IsMoved(uint32_t fs, uint64_t ino) const;
  uint64_t moved() const;  // files found moved (not while Take is being called)
  // What the next pass's records may take (Load's `most`) when they and the moved files
  // share `share` bytes: what the moved files found so far leave of it (they stay until
  // the records are carried), a quarter of it at least.
  uint64_t PassRoom(uint64_t share) const;

 private:
  struct Record {
    uint64_t ino;
    QuietDigest digest;
  };
  struct Wanted {
    uint32_t fs;
    std::vector<Record> records;  // by inode, after Load
    MovedFiles moved;             // sorted by Done
  };
  Wanted* Of(uint32_t fs);
  // Drops the records of the highest numbers, about a quarter of those kept, and lowers
  // *upto to the first number dropped; false when all are of one number.
  bool DropHighest(uint64_t* upto);
  // The number three quarters up the `n` records kept (they may be reordered).
  uint64_t QuarterCut(size_t n);
  // Keeps c's new extents as a moved file of `w`; takes moved_mu_ (Take runs on many threads).
  void AddMoved(Wanted* w, const ChangedInode& c);
  const Wanted* Of(uint32_t fs) const;
  std::vector<Wanted> wanted_;
  std::mutex moved_mu_;  // guards the moved lists while Take is called
};

}  // namespace oans
