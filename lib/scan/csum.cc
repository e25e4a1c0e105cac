#include "lib/scan/csum.h"

#include <algorithm>

namespace oans {

const char* ReadWhyName(ReadWhy w) {
  switch (w) {
    case ReadWhy::kAsked: return "--read-data";
    case ReadWhy::kNotBtrfs: return "not btrfs";
    case ReadWhy::kNotPermitted: return "checksum search refused (not root)";
    case ReadWhy::kNoCow: return "nodatacow";
    case ReadWhy::kCompressed: return "compressed";
    case ReadWhy::kInline: return "inline";
    case ReadWhy::kNoChecksum: return "no checksum";
    default: return "other";
  }
}

// A run of a file's sectors described one way.
struct Checksums::Segment {
  enum Type { kSums, kRead, kHole } type;
  uint64_t sector, count;
  uint64_t physical;  // kSums: btrfs logical address of the first sector
  ReadWhy why;        // kRead
};

namespace {

constexpr uint32_t kNoCowFlag = 0x00800000;     // FS_NOCOW_FL
constexpr uint32_t kExtentNotAligned = 0x100;   // FIEMAP_EXTENT_NOT_ALIGNED

// How extent x's sectors get their sums, or why they are read.
bool Usable(const FiemapExtent& x, ReadWhy* why) {
  if (x.flags & kExtentEncoded) *why = ReadWhy::kCompressed;
  else if (x.flags & (kExtentInline | kExtentNotAligned)) *why = ReadWhy::kInline;
  else if ((x.flags & (kExtentDelalloc | kExtentUnknown)) || x.logical % kSectorBytes || x.physical % kSectorBytes)
    *why = ReadWhy::kOther;
  else return true;
  return false;
}

// The file's sectors as segments, in order: extents (clipped to the size), holes between.
std::vector<Checksums::Segment> SegmentsOf(const FileEntry& e) {
  std::vector<FiemapExtent> ext = e.extents;
  std::sort(ext.begin(), ext.end(), [](const FiemapExtent& a, const FiemapExtent& b) { return a.logical < b.logical; });
  const uint64_t sectors = (e.size + kSectorBytes - 1) / kSectorBytes;
  std::vector<Checksums::Segment> out;
  uint64_t at = 0;  // next sector not described
  auto add = [&](Checksums::Segment s) {
    if (s.count == 0) return;
    out.push_back(s);
    at = s.sector + s.count;
  };
  for (const auto& x : ext) {
    if (x.flags & kExtentUnwritten) continue;  // preallocated: reads as zeros, a hole (as SEEK_DATA has it)
    ReadWhy why = ReadWhy::kOther;
    const bool sums = Usable(x, &why);
    const uint64_t first = x.logical / kSectorBytes;
    const uint64_t end = std::min(sectors, (x.logical + x.length + kSectorBytes - 1) / kSectorBytes);
    if (first < at) {  // overlapping map: read what is not yet described
      if (end > at) add({Checksums::Segment::kRead, at, end - at, 0, ReadWhy::kOther});
      continue;
    }
    if (first >= sectors) break;
    add({Checksums::Segment::kHole, at, first - at, 0, ReadWhy::kOther});
    add({sums ? Checksums::Segment::kSums : Checksums::Segment::kRead, first, end - first, x.physical, why});
  }
  add({Checksums::Segment::kHole, at, sectors - at, 0, ReadWhy::kOther});
  return out;
}

// Reads sectors [sector, sector + count) of fd (the file being `size` bytes) and feeds
// their sums to keys. False when the file ended early.
struct SectorRun {
  Sys& sys;
  int fd;
  uint64_t size, sector, count;
};

Result<bool> ReadSectors(const SectorRun& run, const ReadIo& io, SumKeys* keys, uint64_t* read) {
  Sys& sys = run.sys;
  const int fd = run.fd;
  const uint64_t size = run.size, sector = run.sector, count = run.count;
  const SumKind kind = keys->kind();
  std::vector<char>* buffer = io.buffer;
  std::atomic<uint64_t>* bytes_read = io.bytes_read;
  if (buffer->size() < (256u << 10)) buffer->assign(256u << 10, 0);
  const uint64_t end = std::min(size, (sector + count) * kSectorBytes);
  for (uint64_t off = sector * kSectorBytes; off < end;) {
    const size_t len = size_t(std::min<uint64_t>(buffer->size(), end - off));
    for (size_t got = 0; got < len;) {
      OANS_ASSIGN_OR_RETURN(auto r, sys.Pread(fd, buffer->data() + got, len - got, off + got));
      if (r == 0) return false;
      got += r;
    }
    for (size_t s = 0; s < len; s += kSectorBytes) keys->Add(SectorSum(kind, buffer->data() + s, len - s));
    off += len;
    *read += len;
    if (bytes_read) bytes_read->fetch_add(len, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace

Checksums::Checksums(Sys& sys, bool read_data) : sys_(sys), read_data_(read_data) {}

ChecksumCounts Checksums::counts() const {
  ChecksumCounts c;
  c.files = files_.load();
  c.bytes = bytes_.load();
  c.hole_bytes = hole_bytes_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, fs] : fs_)
      if (fs->tree) c.searches += fs->tree->searches();
  }
  c.inline_bytes = inline_bytes_.load();
  for (size_t i = 0; i < c.read.size(); ++i) c.read[i] = read_[i].load();
  return c;
}

// The first file met on a filesystem: its checksum facts (lib/btrfs/csum.h).
const Checksums::Fs& Checksums::FsOf(const std::string& fs_key, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = fs_[fs_key];
  if (slot) return *slot;
  slot = std::make_unique<Fs>();
  Fs& fs = *slot;
  const CsumTreeFacts facts = ProbeCsumTree(sys_, fd);
  if (!facts.btrfs) return fs;  // kNotBtrfs
  fs.kind = SumKindOfBtrfs(facts.csum_type);
  fs.why = ReadWhy::kOther;
  if (!facts.layout) return fs;
  // A failed syncfs leaves unwritten data as delalloc extents (read), and files unmapped
  // from the trees (which would not hold that data yet).
  fs.committed = facts.committed;
  if (!facts.permitted) {
    fs.why = ReadWhy::kNotPermitted;
    return fs;
  }
  fs.tree = std::make_unique<CsumTree>(sys_, facts);
  fs.usable = true;
  return fs;
}

const Checksums::Fs* Checksums::Eligible(int fd, const std::string& fs_key, const FileEntry& e,
                                         std::vector<Segment>* segments, ReadWhy* why) {
  if (read_data_) return *why = ReadWhy::kAsked, nullptr;
  const Fs& fs = FsOf(fs_key, fd);
  if (!fs.usable) return *why = fs.why, nullptr;
  if (e.inode_flags & kNoCowFlag) return *why = ReadWhy::kNoCow, nullptr;
  if (e.extents.empty() && e.size > 0) return *why = ReadWhy::kOther, nullptr;
  *segments = SegmentsOf(e);
  // Keys from sums take a step per sector, holes included: a huge sparse file (a hostile
  // user's 4 EiB one) is hashed from its data instead, which skips its holes whole.
  uint64_t hole_sectors = 0;
  for (const auto& seg : *segments)
    if (seg.type == Segment::kHole) hole_sectors += seg.count;
  if (hole_sectors > kMaxKeptSums) return *why = ReadWhy::kOther, nullptr;
  return &fs;
}

Result<bool> Checksums::Fill(int fd, const std::string& fs_key, const ReadIo& io, FileEntry* e, ReadWhy* why) {
  std::vector<Segment> segments;
  const Fs* fs = Eligible(fd, fs_key, *e, &segments, why);
  if (!fs) return false;
  // Inline data is the whole of a small file: read as before, its keys are reused by
  // --previous (keys from checksums are looked up again instead).
  for (const auto& s : segments)
    if (s.type == Segment::kRead && s.why == ReadWhy::kInline) return *why = ReadWhy::kInline, false;
  if (!Computable(fs->kind))
    for (const auto& s : segments)
      if (s.type != Segment::kSums) return *why = s.type == Segment::kRead ? s.why : ReadWhy::kOther, false;
  return FillFrom({fd, fd, *fs, segments}, io, e, why);
}

Result<bool> Checksums::FillUnopened(int dirfd, const std::string& fs_key, uint32_t block_size,
                                     const std::atomic<bool>* stop, FileEntry* e) {
  std::vector<Segment> segments;
  ReadWhy why = ReadWhy::kOther;
  const Fs* fs = Eligible(dirfd, fs_key, *e, &segments, &why);
  if (!fs || e->extents.empty()) return false;
  for (const auto& s : segments)
    if (s.type == Segment::kRead) return false;  // nothing is read without the file open
  return FillFrom({-1, dirfd, *fs, segments}, {block_size, nullptr, nullptr, stop}, e, &why);
}

// The sums of every segment in order, then the keys. With an open file (`read_fd`), what
// has no checksum is read and its extents are mapped again after, to see that they did
// not move meanwhile; without one (-1), a sector without a checksum gives up, and the
// map is not checked again (csum.h, FillUnopened). Searches go through `search_fd`.
Result<bool> Checksums::FillFrom(const FillJob& job, const ReadIo& io, FileEntry* e, ReadWhy* why) {
  const int read_fd = job.read_fd, search_fd = job.search_fd;
  const Fs& fs = job.fs;
  const std::atomic<bool>* stop = io.stop;
  SumKeys keys(fs.kind, e->size, io.block_size);
  std::array<uint64_t, size_t(ReadWhy::kCount)> read{};
  uint64_t from_sums = 0, holes = 0;
  CsumRun run;
  for (const auto& s : job.segments) {
    if (stop && stop->load(std::memory_order_relaxed)) return Status::Interrupted("stopped while reading");
    if (s.type == Segment::kHole) {
      keys.Hole(s.count);
      holes += std::min(e->size, (s.sector + s.count) * kSectorBytes) - s.sector * kSectorBytes;
      continue;
    }
    if (s.type == Segment::kRead) {
      OANS_ASSIGN_OR_RETURN(bool whole, ReadSectors({sys_, read_fd, e->size, s.sector, s.count}, io, &keys,
                                                    &read[size_t(s.why)]));
      if (!whole) return Status::Mismatch("file shrank while being read");
      continue;
    }
    // Long extents are looked up a window at a time.
    for (uint64_t done = 0; done < s.count;) {
      const uint64_t n = std::min<uint64_t>(s.count - done, 1u << 15);
      OANS_RETURN_IF_ERROR(fs.tree->Lookup(search_fd, s.physical + done * kSectorBytes, n, &run));
      const auto& sums = run.sums;
      const auto& have = run.have;
      for (uint64_t i = 0; i < n;) {
        if (have[i]) {
          keys.Add(sums[i]);
          from_sums += std::min<uint64_t>(kSectorBytes, e->size - (s.sector + done + i) * kSectorBytes);
          ++i;
          continue;
        }
        if (!Computable(fs.kind) || read_fd < 0) return *why = ReadWhy::kNoChecksum, false;
        uint64_t j = i;
        while (j < n && !have[j]) ++j;
        OANS_ASSIGN_OR_RETURN(bool whole, ReadSectors({sys_, read_fd, e->size, s.sector + done + i, j - i}, io, &keys,
                                                      &read[size_t(ReadWhy::kNoChecksum)]));
        if (!whole) return Status::Mismatch("file shrank while being read");
        i = j;
      }
      done += n;
    }
  }
  if (read_fd >= 0) {
    std::vector<FiemapExtent> after;
    if (!sys_.Fiemap(read_fd, &after).ok() || after.size() != e->extents.size() ||
        !std::equal(after.begin(), after.end(), e->extents.begin(), [](const FiemapExtent& a, const FiemapExtent& b) {
          return a.logical == b.logical && a.physical == b.physical && a.length == b.length && a.flags == b.flags;
        }))
      return *why = ReadWhy::kNoChecksum, false;
  }
  keys.Finish(&e->hash, &e->block_hashes, &e->sector_sums);
  e->sum_kind = e->key_kind = uint8_t(fs.kind);
  e->hashed = true;
  for (size_t i = 0; i < read.size(); ++i)
    if (read[i]) read_[i].fetch_add(read[i], std::memory_order_relaxed);
  bytes_.fetch_add(from_sums, std::memory_order_relaxed);
  hole_bytes_.fetch_add(holes, std::memory_order_relaxed);
  files_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace oans
