// What a scan following btrfs changes (lib/scan/follow.h) learns and carries: the roots,
// the inodes btrfs says changed, the entries of the directories that changed, the paths
// below renamed or removed directories, the previous records of changed inodes, and
// the new index's records, spooled to unnamed temporary files (directories first) until
// the header can be written. Owned by FollowScan; its methods run on FollowScan's thread
// in the order declared, except that the changed files are read on TBB's threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/spill.h"
#include "lib/base/sys.h"
#include "lib/format/frame_stream.h"
#include "lib/format/index_file.h"
#include "lib/scan/builder.h"
#include "lib/scan/csum.h"
#include "lib/btrfs/changes.h"
#include "lib/scan/path_map.h"
#include "lib/scan/previous.h"
#include "lib/scan/quiet.h"
#include "lib/scan/scan.h"

namespace oans {

// Why changes cannot be followed: the kind, and the words said once (naming the path or
// the error).
struct FollowWhy {
  FollowWhy() = default;
  FollowWhy(NoFollow k, std::string words) : kind(k), text(std::move(words)) {}
  bool empty() const { return kind == NoFollow::kNone; }
  NoFollow kind = NoFollow::kNone;
  std::string text;
};

// A root of the scan, or a subvolume below one (followed as a root of its own).
struct FollowRoot {
  std::string path;  // absolute: a root as in the index header, or a subvolume's top
  std::string rel;   // the same directory within its subvolume ("" for the subvolume's root)
  std::string top;   // the scan's root it lies below (its own path for a root)
  int fd = -1;
  uint64_t dev = 0;
  uint32_t fs = 0;  // in the previous (and new) header's filesystems
  uint64_t since = 0;
  // Its blocks written since that hold the items of the inodes numbered below this are
  // in memory (ReadTreesAhead; UINT64_MAX: all of them).
  uint64_t read_ahead_below = 0;
  bool read_ahead_cut = false;  // the first read-ahead's budget held only some of them
  // Its blocks written since cannot be read from the device (ChangedLeaves::Lay said
  // why, once): the judge searches, and reads them ahead part by part.
  bool leaves_by_search = false;
  FsIdentity id;
  SubvolumeChanges changes;
  std::unordered_map<uint64_t, const ChangedInode*> changed;  // by inode
  // Where each directory the changed inodes lie in is linked, up to the subvolume's root.
  std::map<uint64_t, DirLink> dir_links;
};

// A part of a root's inode numbers read ahead (FollowState::read_ahead_from): it ends
// before `end`; `in_memory` when its blocks written since were all read.
struct PartAhead {
  uint64_t end;
  bool in_memory;
};

// A snapshot created since the previous index of a subvolume that index holds. The
// source's records are carried to it (paths below from_path moved below to_path), and
// it is followed from the source's generation.
struct FollowClone {
  uint32_t from_fs = 0;  // the source, in the previous header's filesystems
  uint32_t to_fs = 0;    // the snapshot, in the new header's (after the previous ones)
  size_t root = 0;       // the snapshot's entry in FollowState::roots
  std::string from_path, to_path;  // their tops
};

// A changed file: its paths now, and once mapped its record so far (identity, extents)
// and where its hashes may come from without reading it.
struct ChangedFile {
  FollowRoot* root = nullptr;
  uint64_t ino = 0;
  std::vector<std::string> paths;
  bool present = false;  // opened and mapped: a regular file of the root's subvolume
  bool mapped = false;   // FIEMAP answered, or the tree's items mapped it
  bool from_items = false;  // mapped from the tree's items, not opened
  const ChangedInode* item = nullptr;  // its items, for a file btrfs named
  FileEntry entry;
  // Hashes of a previous record with the very same extents (a reflinked copy, data
  // shared since): the same bytes, so the same hashes.
  bool same_extents = false;
  std::unique_ptr<FileEntry> keys;  // that record (its keys and sums are taken)
};

// A changed directory that still exists below its root: its path now and its entries.
struct ChangedDir {
  std::string path;
  std::vector<std::pair<std::string, uint64_t>> entries;  // (name, inode), sorted by name
  bool known = false;                                     // the previous index recorded it
  int64_t mtime_ns = 0, ctime_ns = 0;                     // from its inode item
  // Sets the entries from a directory's items in key order: sorted by name; of a name
  // met twice (unlinked and made again while the items were read in batches), the
  // later, the one there now.
  void SetEntries(std::vector<std::pair<std::string, uint64_t>> found);
  // The inode `name` names, or 0 when it names none.
  uint64_t Find(std::string_view name) const {
    auto it = std::lower_bound(entries.begin(), entries.end(), name,
                               [](const auto& e, std::string_view n) { return e.first < n; });
    return it != entries.end() && it->first == name ? it->second : 0;
  }
};

// The absolute path of subvolume-relative `rel`, or nullopt when it is not below root r.
std::optional<std::string> UnderRoot(const FollowRoot& r, const std::string& rel);

// Changed inodes from which on the previous index is read first, and the inodes judged
// from their items as the change search meets them: those whose items match their
// records are not held (lib/scan/quiet.h).
inline constexpr size_t kJudgeQuietFrom = 2048;

class FollowState {
 public:
  FollowState(Sys& sys, const ScanOptions& o, Observer* observer, ScanStats* stats)
      : sys_(sys), o_(o), observer_(observer), stats_(stats), checksums_(sys, o.read_data) {}
  ~FollowState();
  FollowState(const FollowState&) = delete;
  FollowState& operator=(const FollowState&) = delete;

  std::vector<FollowRoot> roots;
  // The previous index's filesystems that are no longer below a root: subvolumes deleted
  // (or moved out) since. Their records and directories are dropped.
  std::vector<uint32_t> gone;
  std::vector<FollowClone> clones;
  // Where the first read-ahead did not hold them all, the judge takes the inode numbers
  // part by part, each part's blocks read ahead before it is judged: this reads ahead
  // the blocks written since of r's inodes numbered `from` to `upto` - 1, as many as the
  // budget holds (those of the lowest numbers), and says where the part ends. May be
  // empty.
  std::function<PartAhead(FollowRoot& r, uint64_t from, uint64_t upto)> read_ahead_from;
  // Threads that judge the changed inodes at once, each a slice of the inode numbers
  // (JudgeChangedInodes). On a spinning disk (judge_in_memory_only), more than one
  // only for a root whose blocks written since are all in memory: the head would seek
  // between the slices.
  size_t judge_threads = 1;
  bool judge_in_memory_only = false;
  // On an SSD the judge reads the blocks written since from the device itself, in large
  // requests (lib/btrfs/changed_leaves.h), instead of through the search.
  bool read_leaves = false;
  // Searches of changed inodes made at once (their items read whole): a few on an SSD,
  // one on a spinning disk, whose head would seek between them.
  size_t search_threads = 1;
  // No more on an SSD: each thread's heap stays (after a dedupe of the kernel tree x 2,
  // 16 raised the scan's peak from 24 to 28 MiB, and were no faster).
  static constexpr size_t kMostSearchThreads = 4;
  // Whether `path` (below r.top) is excluded by --exclude.
  bool Excluded(const FollowRoot& r, const std::string& path) const;
  // Whether every record written equals one of the previous index and none is missing.
  bool unchanged() const { return changes_ == 0; }

  // Each of these returns why the changes cannot be followed, or nothing (empty()).
  // The change search of every root's subvolume, and the changed directories read.
  // Inodes whose items say what their record in `prev` says are left out (quiet.h).
  FollowWhy FindChanges(const IndexHeader& prev);
  // The changed regular files below the roots, opened and mapped (in parallel).
  FollowWhy MapChanged();
  // The previous index, streamed: directories, then files carried or set aside.
  FollowWhy StreamPrevious(const IndexHeader& prev);
  // The changed files (and those the previous scan could not read) hashed, or given the
  // hashes of the same inode unchanged in data or of a record with the same extents,
  // and recorded.
  FollowWhy FinishChanged();
  // The new index: `header` with the files changed since the previous index (up to
  // kMaxChangedListed, else none and changed_known false), then the spooled directories
  // and files, then the trailer (none when the scan was stopped).
  Status WriteInto(IndexHeader header, OutputFile* out);

 private:
  // Each root's changed inode numbers, into (*numbers)[root]; past kJudgeQuietFrom in a
  // root, (*many)[root] is set instead (and its numbers dropped).
  FollowWhy FindNumbers(std::vector<std::vector<uint64_t>>* numbers, std::vector<bool>* many);
  // Root r's changed inodes `numbers`, read whole.
  FollowWhy ReadRootChanges(FollowRoot& r, const std::vector<uint64_t>& numbers);
  // The changed inodes of each root `judged` marks judged against the previous records
  // (quiet_), in as many passes over the previous index as --memory needs: those whose
  // items say what their records say are not held.
  FollowWhy JudgeInPasses(const IndexHeader& prev, const std::vector<bool>& judged);
  // Root r's changed inodes numbered `from` to before `upto`, judged: a pass.
  FollowWhy JudgeRootChanges(FollowRoot& r, uint64_t from, uint64_t upto);
  // Numbers `from` to `upto` - 1 of r, their blocks written since all in memory or not.
  // With `leaves`, their items read from the device.
  FollowWhy JudgeRange(FollowRoot& r, uint64_t from, uint64_t upto, bool in_memory,
                       const ChangedLeaves* leaves = nullptr);
  // The reason to walk when root r has more changed inodes than are followed.
  FollowWhy TooMany(const FollowRoot& r) const;
  // Root r's changed directories read, once its changed inodes are known.
  FollowWhy FinishRootChanges(FollowRoot& r);
  // Takes c's entries.
  FollowWhy ReadChangedDir(FollowRoot& r, ChangedInode& c);
  // Fills r.dir_links: the changed directories' links, and their parents' up to the
  // subvolume's root, read level by level in a few searches.
  FollowWhy LinkDirs(FollowRoot& r);
  FollowWhy FinishDirs();
  // The clones of previous filesystem `fs` (none when it has none).
  const std::vector<const FollowClone*>& ClonesOf(uint32_t fs) const;
  // A previous directory record's copy for each clone of its filesystem, in prev_dirs_.
  FollowWhy CloneDir(const IndexDir& d);
  // Each previous filesystem's root now (root_of_fs_, clones_of_).
  void MapFilesystems(const IndexHeader& prev);
  // A previous file record carried (CarryOne), after its copy for each clone.
  FollowWhy CarryWithClones(FileEntry& e);
  // A previous file record carried: written when untouched, else as CarryFile decides.
  FollowWhy CarryOne(FileEntry& e);
  // Sets *untouched (and writes nothing) when the record is carried exactly as it was.
  FollowWhy CarryFile(FileEntry& e, bool* untouched);
  // Whether a previous record is carried exactly as it was: its inode unchanged and read
  // without error, each of its paths still a link to it, none below a renamed, moved or
  // removed directory. R: a decoded record (EntryAt) or one read in place (ViewAt). A
  // file whose extents alone moved (QuietRecords::Moved) is not: its callers look it up.
  template <typename R>
  bool CarriedAsIs(const R& e) const;
  // Whether recorded path `p` still names inode `ino` as far as its directory says: the
  // directory did not change, or it still has that entry for that inode.
  bool StillLinked(uint32_t fs, std::string_view p, uint64_t ino) const;
  // The directories of filesystem `fs` renamed, moved or removed (each filesystem's
  // own: a path below one may be another subvolume's, which did not move).
  const PathMap& Moved(uint32_t fs) const;
  // Whether a batch read in place may be copied as it is: every record carried as it
  // was, none whose extents a changed file may share (MatchExtents needs it decoded).
  bool KeepEncoded(const BatchView& batch, uint64_t* hardlinks);
  void CountCarried(uint64_t records, uint64_t bytes, uint64_t hardlinks);
  // The path of `name` in directory `dir_ino` now, or nullopt outside the root or
  // excluded; *why is set when btrfs cannot say.
  std::optional<std::string> PathOf(FollowRoot& r, uint64_t dir_ino, const std::string& name, FollowWhy* why);
  // The path of directory `dir_ino` within its subvolume now; nullopt and *why set when
  // btrfs cannot say.
  std::optional<std::string> RelPath(FollowRoot& r, uint64_t dir_ino, FollowWhy* why, int depth = 0);
  void MapFile(ChangedFile* f);
  void MapOpened(ChangedFile* f);
  bool HashFile(ChangedFile* f);
  void MatchExtents(const FileEntry& e);
  // MatchExtents for the previous record of a changed inode that still holds its data:
  // unchanged size, mtime and ctime, and the same extents now.
  void MatchIfUnchanged(const FileEntry& e);
  Status Add(FileEntry e);
  void KeepWrite(Status s) {
    if (write_status_.ok() && !s.ok()) write_status_ = std::move(s);
  }

  // Whether a previous record's times may be trusted (not racy: Settled).
  bool Settled(const FileEntry& before) const { return oans::Settled(before, prev_began_ns_); }

  Sys& sys_;
  const ScanOptions& o_;
  int64_t prev_began_ns_ = 0;  // when the previous index's scan began
  Observer* observer_;
  ScanStats* stats_;
  static constexpr int kGoneFs = -2;
  std::vector<int> root_of_fs_;  // previous header's filesystem -> root, -1 none, kGoneFs gone
  std::vector<std::vector<const FollowClone*>> clones_of_;  // previous header's filesystem -> clones
  uint64_t clone_dir_bytes_ = 0;  // the directory records copied for clones
  std::map<std::pair<uint32_t, uint64_t>, ChangedDir> dirs_;  // (fs, inode)
  // By filesystem, then old path.
  std::map<uint32_t, std::map<std::string, const ChangedDir*, std::less<>>> dirs_by_old_path_;
  std::map<std::pair<uint32_t, uint64_t>, std::optional<std::string>> dir_paths_;  // (fs, inode) -> path now
  std::map<std::pair<uint32_t, uint64_t>, std::string> rel_paths_;  // (fs, inode) -> in its subvolume
  std::vector<IndexDir> prev_dirs_;
  bool dirs_done_ = false;
  std::map<uint32_t, PathMap> moved_;  // by filesystem
  std::map<std::pair<uint32_t, uint64_t>, FileEntry> before_;  // previous records of changed inodes
  std::vector<FileEntry> retry_;                                // previous records with an error
  std::vector<ChangedFile> files_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_first_physical_;  // files_ with a plain extent map
  std::unique_ptr<TempFile> dir_spool_, file_spool_;
  std::unique_ptr<IndexWriter> dir_writer_, file_writer_;
  FollowWhy why_;
  // Set when inodes were judged against their records (JudgeInPasses); then holds the files
  // whose extents alone changed.
  std::unique_ptr<QuietRecords> quiet_;
  ChangedLeavesStats leaves_stats_;  // of the judge's reads from the device
  uint64_t changes_ = 0;  // records (and directories) written otherwise than they were, or dropped
  std::vector<std::pair<uint32_t, uint64_t>> changed_files_;  // (fs, inode): IndexHeader::changed_files
  uint64_t changed_at_ = 0;  // where FinishChanged's records start in the file spool
  Status write_status_;
  Checksums checksums_;    // sector sums from btrfs instead of data, as in a walk
  PreviousIndex nothing_;  // the builder's index: changed files are matched here, not there
  std::atomic<uint64_t> bytes_read_{0};
  const RecordBuilder builder_{sys_, o_, nothing_, &checksums_, &bytes_read_};
};

}  // namespace oans
