#include "lib/format/index_record.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

#include <kj/common.h>

#include "lib/base/paths.h"
#include "lib/format/schema_io.h"
#include "lib/format/sector_sum_encoding.h"

namespace oans {

using schema_io::FromData;
using schema_io::ReadFs;

namespace {

// Why `what` (a record, a directory record) names a path that no file can have, which
// apply would refuse as damage: empty, relative, with an empty, "." or ".." component, or
// a NUL byte; "" when the path is clean. The path is shown escaped, cut at 200 bytes.
std::string PathDamage(capnp::Data::Reader d, const char* what) {
  const std::string_view p(reinterpret_cast<const char*>(d.begin()), d.size());
  if (CleanAbsolutePath(p)) return "";
  if (p.empty()) return std::string(what) + " has an empty path";
  std::string shown;
  for (char c : p.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      shown += hex;
    } else {
      shown += c;
    }
  }
  if (p.size() > 200) shown += "...";
  const char* why = p[0] != '/'                           ? "is relative"
                    : p.find('\0') != std::string_view::npos ? "holds a NUL byte"
                                                          : "has an empty, \".\" or \"..\" component";
  return std::string(what) + "'s path " + why + ": \"" + shown + "\"";
}

// A record's inode, stat and extents into *e (its extents replaced).
void DecodeStat(schema::FileRecord::Reader f, FileEntry* e) {
  e->fs = f.getFs();
  e->dev = f.getDev();
  e->ino = f.getIno();
  e->size = f.getSize();
  e->mtime_ns = f.getMtimeNs();
  e->ctime_ns = f.getCtimeNs();
  e->nlink = f.getNlink();
  e->inode_flags = f.getInodeFlags();
  e->uid = f.getUid();
  e->gid = f.getGid();
  auto ex = f.getExtents();
  e->extents.clear();
  e->extents.reserve(ex.size());
  for (auto x : ex) e->extents.push_back({x.getLogical(), x.getPhysical(), x.getLength(), x.getFlags()});
}

// Decodes one file record of index `name` (under `header`) into *e. CheckRecord must
// have passed.
void DecodeRecord(schema::FileRecord::Reader f, FileEntry* e) {
  e->path = FromData(f.getPath());
  DecodeStat(f, e);
  e->hashed = f.getHashed();
  e->reused = f.getReused();
  e->hash = {f.getHashHi(), f.getHashLo()};
  auto bh = f.getBlockHashes();
  e->block_hashes.resize(bh.size() / 16);
  for (size_t j = 0; j < e->block_hashes.size(); ++j) {
    std::memcpy(&e->block_hashes[j].hi, bh.begin() + j * 16, 8);
    std::memcpy(&e->block_hashes[j].lo, bh.begin() + j * 16 + 8, 8);
  }
  e->sum_kind = f.getSumKind();
  e->key_kind = f.getKeyKind();
  auto sums = f.getSectorSums();
  e->sector_sums.assign(reinterpret_cast<const char*>(sums.begin()), sums.size());
  e->error = f.getError();
  e->errnum = f.getErrnum();
  for (auto p : f.getOtherPaths()) e->other_paths.push_back(FromData(p));
  e->size_paired = f.getSizePaired();
}

}  // namespace

void FrameBatchView::StatOf(size_t i, FileEntry* e) const {
  const auto f = files_[unsigned(i)];
  DecodeStat(f, e);
  e->hashed = f.getHashed();
  e->error.assign(f.getError().size() != 0 ? "error" : "");
}

// The checks a record must pass, made on the frame's bytes: a known filesystem, paths
// that are absolute and clean (lib/base/paths.h), block hashes and sector sums that fit
// the file's size, known kinds of sums and keys, a record paired by size left unread.
Status CheckRecord(schema::FileRecord::Reader f, const std::string& name, const IndexHeader& header) {
  constexpr uint8_t kLastKind = uint8_t(kLastSumKind);
  if (f.getFs() >= header.filesystems.size())
    return Status::Corrupt(name + " is damaged (a record names an unknown filesystem)");
  std::string bad_path = PathDamage(f.getPath(), "a record");
  for (auto p : f.getOtherPaths())
    if (bad_path.empty()) bad_path = PathDamage(p, "a record's other link");
  if (!bad_path.empty()) return Status::Corrupt(name + " is damaged (" + bad_path + ")");
  const uint64_t size = f.getSize();
  const size_t hash_bytes = f.getBlockHashes().size();
  if (hash_bytes % 16 != 0) return Status::Corrupt(name + " is damaged (block hash list of odd length)");
  // No block hashes at all is allowed: a huge sparse file takes part in
  // whole-file matching only (docs/format.md).
  if (f.getHashed() && hash_bytes != 0 && hash_bytes / 16 != (size + header.block_size - 1) / header.block_size)
    return Status::Corrupt(name + " is damaged (block hashes do not match the file size)");
  const uint8_t sum_kind = f.getSumKind(), key_kind = f.getKeyKind();
  if (sum_kind > kLastKind || key_kind > kLastKind || (key_kind != 0 && key_kind != sum_kind))
    return Status::Corrupt(name + " is damaged (a record has an unknown kind of sector sums or keys)");
  const size_t sums = f.getSectorSums().size();
  if (sums != 0 && (sum_kind == 0 || sums != (size + 4095) / 4096 * 4))
    return Status::Corrupt(name + " is damaged (sector sums do not match the file size)");
  // Paired by size means left unread: no keys, no error.
  const bool keys = f.getHashHi() || f.getHashLo() || hash_bytes != 0 || sums != 0;
  if (f.getSizePaired() && (f.getHashed() || keys || f.getError().size() != 0))
    return Status::Corrupt(name + " is damaged (a record paired by size alone is also read, or failed)");
  return Status::Ok();
}

// Checks and counts the records of batch frame `b` without decoding them.
Status CountBatch(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                  IndexTotals* counted) {
  for (auto f : b.getFiles()) {
    OANS_RETURN_IF_ERROR(CheckRecord(f, name, header));
    counted->records++;
    if (f.getError().size() != 0) counted->errors++;
    counted->bytes += f.getSize();
  }
  return Status::Ok();
}

// Decodes batch frame `b` into *batch (emptied first), counting its records in *seen.
Status DecodeBatch(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                   std::vector<FileEntry>* batch, IndexTotals* seen, RecordsChecked checked) {
  batch->clear();
  auto files = b.getFiles();
  batch->reserve(files.size());
  for (auto f : files) {
    if (checked == RecordsChecked::kNo) OANS_RETURN_IF_ERROR(CheckRecord(f, name, header));
    FileEntry e;
    DecodeRecord(f, &e);
    seen->records++;
    if (!e.error.empty()) seen->errors++;
    seen->bytes += e.size;
    batch->push_back(std::move(e));
  }
  return Status::Ok();
}

// Decodes the directory records of batch frame `b` into *dirs (emptied first).
Status DecodeDirs(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                  std::vector<IndexDir>* dirs, IndexTotals* seen) {
  dirs->clear();
  for (auto d : b.getDirs()) {
    if (d.getFs() >= header.filesystems.size())
      return Status::Corrupt(name + " is damaged (a directory record names an unknown filesystem)");
    if (std::string bad = PathDamage(d.getPath(), "a directory record"); !bad.empty())
      return Status::Corrupt(name + " is damaged (" + bad + ")");
    dirs->push_back({FromData(d.getPath()), d.getFs(), d.getIno(), d.getMtimeNs(), d.getCtimeNs()});
    seen->dirs++;
  }
  return Status::Ok();
}

// Decodes the header frame `h` of index `name` into *header, refusing another kind of
// file, a newer format and an impossible block size.
Status DecodeHeader(schema::IndexHeader::Reader h, const std::string& name, IndexHeader* header) {
  if (h.getMagic() != kj::StringPtr(kIndexMagic)) {
    std::string magic = h.getMagic();
    return Status::Corrupt(name + (magic == "oans-plan" ? " is a dedupe plan, not an index"
                                                       : " is not an oans index (wrong magic)"));
  }
  if (h.getFormatVersion() > kIndexFormatVersion)
    return Status::Version(name + " has index format version " + std::to_string(h.getFormatVersion()) +
                           ", newer than this oans understands (" + std::to_string(kIndexFormatVersion) +
                           "); upgrade oans or re-scan");
  *header = IndexHeader();
  header->format_version = h.getFormatVersion();
  header->tool_version = h.getToolVersion();
  header->created_ns = h.getCreatedNs();
  for (auto r : h.getRoots()) header->roots.push_back(FromData(r));
  for (auto f : h.getFilesystems()) header->filesystems.push_back(ReadFs(f));
  header->block_size = h.getBlockSize();
  header->min_size = h.getMinSize();
  for (auto e : h.getExcludes()) header->excludes.push_back(e);
  header->hostname = h.getHostname();
  for (auto c : h.getCommandLine()) header->command_line.push_back(c);
  header->directories = h.getDirectories();
  header->followed_from = h.getFollowedFrom();
  header->same_as_followed = h.getSameAsFollowed();
  header->mounts_below = h.getMountsBelow();
  header->read_data = h.getReadData() || header->format_version < 2;
  header->changed_known = h.getChangedKnown();
  header->changed_at = h.getChangedAt();
  header->spinning = h.getSpinning();
  header->owners = h.getOwners();
  header->refs_known = h.getRefsKnown();
  for (auto v : h.getSubvolumes())
    header->subvolumes.push_back({v.getReadOnly(), v.getShared(), v.getTreeBytes(), v.getNodeSize(),
                                  std::max<uint32_t>(1, v.getMetadataCopies())});
  if (!header->subvolumes.empty() && header->subvolumes.size() != header->filesystems.size())
    return Status::Corrupt(name + " is damaged (its header has facts of " + std::to_string(header->subvolumes.size()) +
                           " subvolumes for " + std::to_string(header->filesystems.size()) + " filesystems)");
  if (h.getChangedFiles().size() > kMaxChangedListed)
    return Status::Corrupt(name + " is damaged (its header lists " + std::to_string(h.getChangedFiles().size()) +
                           " changed files, more than a scan writes)");
  for (auto c : h.getChangedFiles()) {
    if (c.getFs() >= header->filesystems.size())
      return Status::Corrupt(name + " is damaged (a changed file of filesystem " + std::to_string(c.getFs()) +
                             ", which its header does not list)");
    header->changed_files.emplace_back(c.getFs(), c.getIno());
  }
  if (header->block_size == 0 || header->block_size % 512 != 0)
    return Status::Corrupt(name + " is damaged (block size " + std::to_string(header->block_size) + ")");
  return Status::Ok();
}

// Whether a section's trailer counts the records and batches that were read.
Status CheckTrailer(schema::Trailer::Reader t, const std::string& name, const IndexTotals& seen) {
  if (t.getRecords() != seen.records || t.getBatches() != seen.batches)
    return Status::Corrupt(name + " is damaged: its trailer counts " + std::to_string(t.getRecords()) +
                           " records but " + std::to_string(seen.records) + " were read");
  return Status::Ok();
}

}  // namespace oans
