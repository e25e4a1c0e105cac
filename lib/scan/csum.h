// A file's sector sums and keys from btrfs's checksum tree instead of its data. After a
// syncfs of the filesystem (checksums are inserted once written data reaches disk), each
// uncompressed regular extent's sectors have their checksums at the extent's btrfs
// logical address, which FIEMAP gives as `physical`; they are found with a search of the
// checksum tree over that range (lib/btrfs/csum.h). Data is read only where there is no usable checksum: compressed extents (their
// checksums cover the compressed bytes), inline data, sectors with no checksum
// (nodatasum), extents FIEMAP does not describe exactly; holes and preallocated extents
// (which read as zeros, and which HashFile skips as SEEK_DATA does) are neither read nor
// looked up (the zero sector's sum). A file whose every sector cannot be
// described this way in the filesystem's kind (sha256 and blake2 are not computed
// here), a nodatacow file, another filesystem, a search refused (not root) and
// --read-data leave the file to HashFile, as before, and say why.
// Thread-safe; one object per scan.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/btrfs/csum.h"
#include "lib/format/index_file.h"
#include "lib/scan/hasher.h"
#include "lib/scan/sector_sums.h"

namespace oans {

// Why a file's data, or part of it, was read rather than taken from checksums.
enum class ReadWhy : uint8_t {
  kAsked,         // --read-data
  kNotBtrfs,      // another filesystem (or a btrfs without checksum facts)
  kNotPermitted,  // the checksum tree search was refused: not root
  kNoCow,         // nodatacow file: no checksums
  kCompressed,    // compressed extent: checksums cover the compressed bytes
  kInline,        // data inline in metadata
  kNoChecksum,    // a sector without a checksum (nodatasum), or found changed
  kOther,         // not 4 KiB sectors, an inexact extent map, sha256/blake2 with one of the above
  kCount
};
const char* ReadWhyName(ReadWhy w);

struct ChecksumCounts {
  uint64_t files = 0;           // files whose sums all came from checksums or holes
  uint64_t bytes = 0;           // file bytes whose sums came from checksums
  uint64_t hole_bytes = 0;      // bytes of holes (neither read nor looked up)
  uint64_t searches = 0;        // checksum tree searches
  uint64_t inline_bytes = 0;    // bytes of inline data taken from the items, not read
  std::array<uint64_t, size_t(ReadWhy::kCount)> read{};  // bytes read, by reason
};

class Checksums {
 public:
  // With read_data, every file is left to HashFile (ReadWhy::kAsked).
  Checksums(Sys& sys, bool read_data);

  // Fills e's keys and sums (kinds set, hashed) from the checksums of open file `fd`,
  // whose extents and inode flags e already holds, reading only what has none; true when
  // done. False: the file is to be read whole by HashFile, for reason *why. kInterrupted
  // once `stop` is set. `bytes_read` counts what was read, for progress.
  Result<bool> Fill(int fd, const std::string& fs_key, const ReadIo& io, FileEntry* e, ReadWhy* why);

  // When sums may come from checksums on this filesystem (not --read-data, btrfs with
  // checksum facts, the search permitted) and the syncfs that the first call per
  // filesystem makes succeeded, the generation it committed: the trees then
  // hold every file as it was before the scan, and an inode item of a later transaction
  // is a file changed since. 0 otherwise.
  uint64_t Committed(const std::string& fs_key, int fd) {
    if (read_data_) return 0;
    const Fs& fs = FsOf(fs_key, fd);
    return fs.usable ? fs.committed : 0;
  }

  // Fill for a file that is not open, its extents and inode flags taken from the tree
  // (tree_map.h) and the searches made through `dirfd`, a descriptor of its directory:
  // true when every sector has a checksum or is a hole; false, with nothing counted, when
  // anything would have to be read (the caller then opens the file and calls Fill).
  // Nothing is mapped again after: the extents and the sums are the trees' at the time of
  // their searches (the sums maybe from this thread's window of an earlier one), so a file
  // rewritten in between can get the sums of what its old space holds then, as it can get
  // a colliding sum: a pair the kernel's compare refuses (DIFFERS), never shared data.
  Result<bool> FillUnopened(int dirfd, const std::string& fs_key, uint32_t block_size, const std::atomic<bool>* stop,
                            FileEntry* e);

  // `bytes` of inline data hashed from a file's item (tree_map.h), not read.
  void CountInline(uint64_t bytes) { inline_bytes_.fetch_add(bytes, std::memory_order_relaxed); }

  // `bytes` read by HashFile for reason `why`.
  void CountRead(ReadWhy why, uint64_t bytes) { read_[size_t(why)].fetch_add(bytes, std::memory_order_relaxed); }
  ChecksumCounts counts() const;

  // A run of a file's sectors described one way (csum.cc).
  struct Segment;

 private:
  struct Fs {
    bool usable = false;
    ReadWhy why = ReadWhy::kNotBtrfs;
    SumKind kind = SumKind::kNone;
    uint64_t committed = 0;  // the filesystem's generation after the syncfs; 0 when it failed
    std::unique_ptr<CsumTree> tree;  // when usable
  };
  const Fs& FsOf(const std::string& fs_key, int fd);
  // The checks both fills make first: --read-data, a filesystem without usable checksums,
  // a nodatacow or unmapped file, holes past kMaxKeptSums. Null with *why when the file
  // must be read; else its filesystem, and its segments in *segments.
  const Fs* Eligible(int fd, const std::string& fs_key, const FileEntry& e, std::vector<Segment>* segments,
                     ReadWhy* why);
  // A file's segments, to be filled through `search_fd` and, where they have no
  // checksum, read from `read_fd` (-1: not opened).
  struct FillJob {
    int read_fd;
    int search_fd;
    const Fs& fs;
    const std::vector<Segment>& segments;
  };
  Result<bool> FillFrom(const FillJob& job, const ReadIo& io, FileEntry* e, ReadWhy* why);

  Sys& sys_;
  const bool read_data_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Fs>> fs_;
  std::atomic<uint64_t> files_{0}, bytes_{0}, hole_bytes_{0}, inline_bytes_{0};
  std::array<std::atomic<uint64_t>, size_t(ReadWhy::kCount)> read_{};
};

}  // namespace oans
