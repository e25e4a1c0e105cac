// The extent index: what oans-scan learned about every regular file (identity, extents,
// hashes). IndexWriter streams records in bounded batches; IndexReader validates magic,
// version, frame checksums and the trailer, and hands records out batch by batch so a
// reader's memory does not grow with the file. Format: format/index.capnp, docs/format.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/hash128.h"
#include "lib/base/spill.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/format/frame_stream.h"
#include "lib/format/versions.h"

namespace oans {

// The most files a header lists as changed (IndexHeader::changed_files); a scan that
// finds more lists none, and a longer list is damage.
inline constexpr size_t kMaxChangedListed = size_t(1) << 20;

struct FsRecord {
  std::string uuid;
  uint64_t subvolume = 0;
  uint64_t dev = 0;
  std::string type;
  uint32_t block_size = 4096;
  std::string mount_point;
  std::string subvolume_uuid;  // btrfs subvolume UUID, "" elsewhere
  uint64_t generation = 0;     // btrfs: subvolume generation before any extent was read
  // Two records name the same filesystem when uuid and subvolume agree.
  std::string Key() const { return uuid + "/" + std::to_string(subvolume); }
};

// A btrfs subvolume's facts for the plan's space estimate (lib/btrfs/backrefs.h).
struct IndexSubvolume {
  bool read_only = false, shared = false;
  uint64_t tree_bytes = 0;
  uint32_t node_size = 0, metadata_copies = 1;
};

// A btrfs data extent the records reference and its references (lib/btrfs/backrefs.h).
struct IndexExtent {
  uint32_t fs = 0;
  uint64_t bytenr = 0, disk_bytes = 0;
  uint32_t refs = 0, ro_refs = 0;
};

struct IndexHeader {
  uint32_t format_version = kIndexFormatVersion;
  std::string tool_version;
  int64_t created_ns = 0;
  std::vector<std::string> roots;
  std::vector<FsRecord> filesystems;
  uint32_t block_size = 128 * 1024;
  uint64_t min_size = 0;
  std::vector<std::string> excludes;
  std::string hostname;
  std::vector<std::string> command_line;
  // Every directory read is recorded, before the first file record (IndexDir).
  bool directories = false;
  // Made by following btrfs changes since the index created at `followed_from` (0: by a
  // walk), and then whether every record equals one of that index, none missing.
  int64_t followed_from = 0;
  bool same_as_followed = false;
  // A filesystem was mounted below a root when the scan began: a later scan cannot
  // follow btrfs changes from this index (mounts and unmounts leave no trace in btrfs).
  bool mounts_below = false;
  // The scan was asked for keys of file data (--read-data), not of btrfs checksums; set
  // too for an index of format version 1, whose keys are all of data. Records are reused
  // only by a scan asked the same: keys pair only with keys of their kind.
  bool read_data = false;
  // A followed scan's changes (`changed_known`): the (filesystem, inode) of every file
  // record new or changed since `followed_from` as FileIdentity::UnchangedFrom tells it,
  // which the records from `changed_at` bytes past the end of the header's frame hold.
  // A snapshot taken since is compared with its source: its records are the source's
  // (the same extents), listed only where they differ. A plan --since that index reads
  // them first, and of the rest only what shares a key.
  bool changed_known = false;
  std::vector<std::pair<uint32_t, uint64_t>> changed_files;
  uint64_t changed_at = 0;
  // The roots are on a spinning disk, as the scan found or was told (--storage).
  bool spinning = false;
  // Every record has its owner and group (FileEntry::uid, gid); older indexes do not.
  bool owners = true;
  // btrfs: batches after the records list the data extents they reference (IndexExtent);
  // `subvolumes` is empty or one per filesystem.
  bool refs_known = false;
  std::vector<IndexSubvolume> subvolumes;
  // Whether a scan made this index by following btrfs changes since `old`, of the same
  // roots on the same machine.
  bool FollowedFrom(const IndexHeader& old) const {
    return followed_from != 0 && followed_from == old.created_ns && roots == old.roots && hostname == old.hostname;
  }
};

// A directory the scan read, so that a later scan following btrfs changes knows the
// paths below a directory that was renamed or removed.
struct IndexDir {
  std::string path;
  uint32_t fs = 0;
  uint64_t ino = 0;
  // Its times when it was read: a directory whose times are the same has the same
  // entries (lib/scan/quiet.h). 0: not recorded.
  int64_t mtime_ns = 0, ctime_ns = 0;
};

struct FileEntry {
  std::string path;
  uint32_t fs = 0;  // index into IndexHeader::filesystems
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint32_t nlink = 0, inode_flags = 0;
  uint32_t uid = 0, gid = 0;  // owner and group
  std::vector<FiemapExtent> extents;
  bool hashed = false;
  bool reused = false;
  Hash128 hash;
  std::vector<Hash128> block_hashes;
  // Sector sums (lib/scan/sector_sums.h): their kind (SumKind, 0 none) and 4 bytes per
  // 4 KiB sector; and what made `hash` and `block_hashes`: 0 XXH3-128 of the data, else
  // the sums of that kind. Keys of different kinds never pair.
  uint8_t sum_kind = 0, key_kind = 0;
  std::string sector_sums;
  std::string error;
  int32_t errnum = 0;
  std::vector<std::string> other_paths;
  // Left unread, hashed false: exactly one other file of its filesystem has its size
  // (oans-scan --whole-files-only, --pair-by-size). The plan pairs the two whole;
  // apply's compare decides.
  bool size_paired = false;
};

// What decides whether a file seen again is unchanged (--since, oans-diff; --previous
// reuses hashes only under the stricter HashesStillValid):
// same size and mtime, and the same ctime unless a rename or a link count change explains
// the new one (both update ctime without touching data). Files are matched by
// (filesystem, inode) before this is asked.
struct FileIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint32_t nlink = 0;
  uint64_t path_hash = 0;
  static FileIdentity Of(const FileEntry& e);
  bool UnchangedFrom(const FileIdentity& before) const {
    return size == before.size && mtime_ns == before.mtime_ns &&
           (ctime_ns == before.ctime_ns || path_hash != before.path_hash || nlink != before.nlink);
  }
  // Whether hashes recorded for `before` may be reused: size, mtime and ctime all equal.
  // A rename or a new link explains a new ctime, but so does a rename over a file
  // rewritten with its old mtime restored (touch -r, rsync -t): only a ctime nobody
  // can set proves the data was not written since.
  bool HashesStillValid(const FileIdentity& before) const {
    return size == before.size && mtime_ns == before.mtime_ns && ctime_ns == before.ctime_ns;
  }
};

// A record's times prove nothing of a change made after it was read within the same
// tick of the kernel's clock (a few milliseconds where timestamps are coarse): a file
// written again then keeps the size, mtime and ctime recorded. A record whose ctime lies
// less than kRacyNs before the scan that made it began, or after, is racy: its hashes
// are not reused and its times do not make it quiet, until a scan begun later records it.
inline constexpr int64_t kRacyNs = 1'000'000'000;
inline bool Settled(const FileEntry& e, int64_t scan_began_ns) { return e.ctime_ns < scan_began_ns - kRacyNs; }
// The same of a directory record (whose entries may have changed in its ctime's tick).
inline bool Settled(const IndexDir& d, int64_t scan_began_ns) {
  return d.ctime_ns != 0 && d.ctime_ns < scan_began_ns - kRacyNs;
}

struct IndexTotals {
  uint64_t records = 0, batches = 0, errors = 0, bytes = 0;
  uint64_t dirs = 0;  // directory records (not in the trailer's count)
};

// Where the compressed frame of the batch being handed out lies in the file being read
// (valid during the callback), so that a reader may copy it verbatim.
struct FrameSpan {
  int fd = -1;
  uint64_t start = 0, end = 0;
};

// Each batch is compressed and written by another thread while the next is gathered
// (FrameWriter's `behind`); Finish, Flush and AppendFrames return once all is written.
class IndexWriter {
 public:
  // Writes to `out` (not owned); call Finish() then out->Commit().
  IndexWriter(OutputFile* out, size_t batch_records = 2048);
  // Writes to a descriptor (not owned), for a spool of records to be appended later.
  IndexWriter(int fd, std::string name, size_t batch_records = 2048);
  ~IndexWriter();
  IndexWriter(const IndexWriter&) = delete;
  IndexWriter& operator=(const IndexWriter&) = delete;
  Status WriteHeader(const IndexHeader& header);
  Status Add(FileEntry entry);
  Status AddDir(IndexDir dir);
  // After every record: one data extent (IndexHeader::refs_known).
  Status AddExtent(const IndexExtent& e);
  // Flushes the last batch and writes the trailer.
  Status Finish();
  // Writes the pending batch without a trailer (an interrupted scan).
  Status Flush();
  const IndexTotals& totals() const { return totals_; }
  // Called with each record Add is given, before it is kept (the scan's census of
  // data extents, lib/scan/census.h).
  void OnAdd(std::function<void(const FileEntry&)> f) { on_add_ = std::move(f); }
  // After the header: copies the batches another writer wrote to `spool` (flushed, no
  // header or trailer) and counts them, described by that writer's totals.
  Status AppendFrames(const TempFile& spool, const IndexTotals& spooled);
  // Copies one batch frame of another index verbatim (bytes [span.start, span.end) of
  // span.fd, a frame ReadIndex has checked), counted as `counted`. Frames that follow
  // each other there are copied at once, in the kernel (copy_file_range) where it can.
  Status AppendFrame(const FrameSpan& span, const IndexTotals& counted);

 private:
  Status FlushBatch();
  Status FlushCopy();  // the frames AppendFrame has not copied yet
  // Those frames: bytes [copy_start_, copy_end_) of the file (copy_dev_, copy_ino_),
  // open as copy_fd_ (a duplicate: the caller may close its own descriptor meanwhile).
  int copy_fd_ = -1;
  uint64_t copy_dev_ = 0, copy_ino_ = 0, copy_start_ = 0, copy_end_ = 0;
  int fd_;
  std::string name_;
  FrameWriter frames_;
  size_t batch_records_;
  size_t batch_bytes_ = 0;
  std::vector<FileEntry> pending_;
  std::vector<IndexDir> pending_dirs_;
  std::vector<IndexExtent> pending_extents_;
  std::function<void(const FileEntry&)> on_add_;
  IndexTotals totals_;
};

// The file records of one batch frame read in place, without decoding them (valid only
// during the callback it is given to): enough for a reader to decide whether the batch
// may be handed on as it is (IndexReadOptions::keep_encoded).
class BatchView {
 public:
  virtual ~BatchView() = default;
  virtual size_t size() const = 0;
  virtual uint32_t fs(size_t i) const = 0;
  virtual uint64_t ino(size_t i) const = 0;
  virtual uint64_t dev(size_t i) const = 0;  // st_dev when scanned
  virtual bool has_error(size_t i) const = 0;
  virtual std::string_view path(size_t i) const = 0;
  virtual size_t other_path_count(size_t i) const = 0;
  virtual std::string_view other_path(size_t i, size_t j) const = 0;
  // The physical address of the record's first extent; nullopt without extents.
  virtual std::optional<uint64_t> first_physical(size_t i) const = 0;
  // The record's keys as FileEntry holds them: `hashed`, the whole-file hash, the block
  // hashes (16 bytes each, hi then lo, little-endian) and the sector sums (4 bytes each).
  virtual bool hashed(size_t i) const = 0;
  virtual Hash128 hash(size_t i) const = 0;
  virtual std::string_view block_hashes(size_t i) const = 0;
  virtual std::string_view sector_sums(size_t i) const = 0;
  // The record's inode and what its stat and extents say, into *e (which may hold an
  // earlier record: its capacity is reused): fs, dev, ino, size, times, links, flags,
  // owner, extents, `hashed`, and `error` as "error" when the record has one. Neither
  // paths nor keys: for a reader that looks at many records and keeps little of each.
  virtual void StatOf(size_t i, FileEntry* e) const = 0;
};

struct IndexReadOptions {
  // Accept a file cut short after its header (an interrupted scan: it ends after a batch
  // without a trailer, or inside a frame); `truncated` is then set in the result instead
  // of failing, and only the complete frames before the cut are handed out. Damage (a
  // frame whose checksum fails, a message that does not parse) is an error all the same.
  bool allow_truncated = false;
  // Called with each batch's directory records (IndexHeader::directories), before the
  // batch's files; unset, they are skipped.
  std::function<Status(const IndexHeader&, std::vector<IndexDir>&)> on_dirs;
  // Called with each batch's data extents (IndexHeader::refs_known); unset, skipped.
  std::function<Status(const IndexHeader&, const std::vector<IndexExtent>&)> on_extents;
  // When set, filled before each batch is handed out.
  FrameSpan* span = nullptr;
  // When set, asked of each batch frame after its directories went to on_dirs, its
  // records checked as decoding checks them: true hands the batch to on_encoded
  // undecoded, with its records counted (`span` is set: the frame may be copied as it
  // is); false decodes it for on_batch.
  std::function<bool(const IndexHeader&, const BatchView&)> keep_encoded;
  std::function<Status(const IndexHeader&, const IndexTotals& counted)> on_encoded;
};

struct IndexReadResult {
  IndexTotals totals;
  bool truncated = false;
  uint64_t cut_at = 0;  // when truncated: the byte offset where the complete frames end
  int sections = 0;  // concatenated indexes count as several sections
};

// Reads an index file ("-" for standard input). on_header is called for each section's
// header (indexes may be concatenated); on_batch for each batch of records, which the
// callee may move from. A callback returning a non-OK Status stops the read.
Result<IndexReadResult> ReadIndex(
    const std::string& path, const IndexReadOptions& options,
    const std::function<Status(const IndexHeader&)>& on_header,
    const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch);

// The records of the index at `path` from `at` bytes past the end of its header's frame
// on (IndexHeader::changed_at), decoded and checked as ReadIndex checks them, up to the
// trailer; the frames before `at` are not read. on_header gets the header first. For a
// first look at part of one index (not concatenated ones) that ReadIndex then reads
// whole: only there are the trailer's counts checked. `path` must be seekable. *more is
// set when another message follows the trailer (the file holds several indexes).
Status ReadIndexTail(const std::string& path, uint64_t at, const std::function<Status(const IndexHeader&)>& on_header,
                     const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch,
                     bool* more);

// The header of the index at `path` alone (its first frame).
Result<IndexHeader> ReadIndexHeader(const std::string& path);

// Reads a whole index into memory (tests, small tools).
struct IndexContents {
  IndexHeader header;
  std::vector<FileEntry> files;
  IndexReadResult result;
};
Result<IndexContents> ReadIndexFile(const std::string& path, const IndexReadOptions& options = {});

int64_t NowNs();

}  // namespace oans
