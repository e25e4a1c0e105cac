#include "lib/format/index_file.h"

#include <capnp/serialize.h>
#include <kj/exception.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "format/index.capnp.h"
#include "lib/format/frame_ahead.h"
#include "lib/format/index_record.h"
#include "lib/format/schema_io.h"

namespace oans {
namespace {

using schema_io::Bytes;

size_t EstimateBytes(const FileEntry& e) {
  return 128 + e.path.size() + e.extents.size() * 32 + e.block_hashes.size() * 16 + e.sector_sums.size();
}

}  // namespace

FileIdentity FileIdentity::Of(const FileEntry& e) {
  return FileIdentity{e.size, e.mtime_ns, e.ctime_ns, e.nlink, HashBytes(e.path.data(), e.path.size()).lo};
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

IndexWriter::IndexWriter(OutputFile* out, size_t batch_records)
    : IndexWriter(out->fd(), out->name(), batch_records) {}

IndexWriter::IndexWriter(int fd, std::string name, size_t batch_records)
    : fd_(fd), name_(name), frames_(fd, std::move(name), /*behind=*/true), batch_records_(batch_records) {}


Status IndexWriter::WriteHeader(const IndexHeader& h) {
  capnp::MallocMessageBuilder msg;
  auto hb = msg.initRoot<schema::IndexFrame>().initHeader();
  hb.setMagic(kIndexMagic);
  hb.setFormatVersion(h.format_version);
  hb.setToolVersion(h.tool_version);
  hb.setCreatedNs(h.created_ns);
  auto roots = hb.initRoots(unsigned(h.roots.size()));
  for (unsigned i = 0; i < h.roots.size(); ++i) roots.set(i, Bytes(h.roots[i]));
  auto fss = hb.initFilesystems(unsigned(h.filesystems.size()));
  for (unsigned i = 0; i < h.filesystems.size(); ++i) schema_io::WriteFs(fss[i], h.filesystems[i]);
  hb.setBlockSize(h.block_size);
  hb.setMinSize(h.min_size);
  auto ex = hb.initExcludes(unsigned(h.excludes.size()));
  for (unsigned i = 0; i < h.excludes.size(); ++i) ex.set(i, h.excludes[i]);
  hb.setHostname(h.hostname);
  auto cl = hb.initCommandLine(unsigned(h.command_line.size()));
  for (unsigned i = 0; i < h.command_line.size(); ++i) cl.set(i, h.command_line[i]);
  hb.setDirectories(h.directories);
  hb.setFollowedFrom(h.followed_from);
  hb.setMountsBelow(h.mounts_below);
  hb.setReadData(h.read_data);
  hb.setSameAsFollowed(h.same_as_followed);
  hb.setChangedKnown(h.changed_known);
  hb.setChangedAt(h.changed_at);
  hb.setSpinning(h.spinning);
  hb.setOwners(h.owners);
  hb.setRefsKnown(h.refs_known);
  auto subs = hb.initSubvolumes(unsigned(h.subvolumes.size()));
  for (unsigned i = 0; i < h.subvolumes.size(); ++i) {
    const IndexSubvolume& v = h.subvolumes[i];
    subs[i].setReadOnly(v.read_only);
    subs[i].setShared(v.shared);
    subs[i].setTreeBytes(v.tree_bytes);
    subs[i].setNodeSize(v.node_size);
    subs[i].setMetadataCopies(v.metadata_copies);
  }
  auto changed = hb.initChangedFiles(unsigned(h.changed_files.size()));
  for (unsigned i = 0; i < h.changed_files.size(); ++i) {
    changed[i].setFs(h.changed_files[i].first);
    changed[i].setIno(h.changed_files[i].second);
  }
  return frames_.Write(msg);
}

Status IndexWriter::Add(FileEntry entry) {
  if (on_add_) on_add_(entry);
  batch_bytes_ += EstimateBytes(entry);
  totals_.records++;
  if (!entry.error.empty()) totals_.errors++;
  totals_.bytes += entry.size;
  pending_.push_back(std::move(entry));
  if (pending_.size() >= batch_records_ || batch_bytes_ >= (8u << 20)) return FlushBatch();
  return Status::Ok();
}


Status IndexWriter::AddDir(IndexDir dir) {
  batch_bytes_ += 32 + dir.path.size();
  totals_.dirs++;
  pending_dirs_.push_back(std::move(dir));
  if (pending_dirs_.size() >= batch_records_ * 4 || batch_bytes_ >= (8u << 20)) return FlushBatch();
  return Status::Ok();
}

Status IndexWriter::AddExtent(const IndexExtent& e) {
  batch_bytes_ += 40;
  pending_extents_.push_back(e);
  if (pending_extents_.size() >= batch_records_ * 16) return FlushBatch();
  return Status::Ok();
}

Status IndexWriter::FlushBatch() {
  if (pending_.empty() && pending_dirs_.empty() && pending_extents_.empty()) return Status::Ok();
  OANS_RETURN_IF_ERROR(FlushCopy());  // frames appended before these records
  // One segment for the whole batch, sized from the estimate with room to spare: a
  // reader then follows no pointer into another segment (each costs a lookup).
  const size_t first_words = std::min<size_t>(batch_bytes_ / 8 * 3 / 2 + 1024, size_t(16) << 20);
  capnp::MallocMessageBuilder msg{static_cast<capnp::uint>(first_words)};
  auto batch = msg.initRoot<schema::IndexFrame>().initBatch();
  if (!pending_dirs_.empty()) {
    auto dirs = batch.initDirs(unsigned(pending_dirs_.size()));
    for (unsigned i = 0; i < pending_dirs_.size(); ++i) {
      dirs[i].setPath(Bytes(pending_dirs_[i].path));
      dirs[i].setFs(pending_dirs_[i].fs);
      dirs[i].setIno(pending_dirs_[i].ino);
      dirs[i].setMtimeNs(pending_dirs_[i].mtime_ns);
      dirs[i].setCtimeNs(pending_dirs_[i].ctime_ns);
    }
    pending_dirs_.clear();
  }
  if (!pending_extents_.empty()) {
    auto ext = batch.initExtents(unsigned(pending_extents_.size()));
    for (unsigned i = 0; i < pending_extents_.size(); ++i) {
      const IndexExtent& e = pending_extents_[i];
      ext[i].setFs(e.fs);
      ext[i].setBytenr(e.bytenr);
      ext[i].setDiskBytes(e.disk_bytes);
      ext[i].setRefs(e.refs);
      ext[i].setRoRefs(e.ro_refs);
    }
    pending_extents_.clear();
  }
  auto files = batch.initFiles(unsigned(pending_.size()));
  for (unsigned i = 0; i < pending_.size(); ++i) {
    const FileEntry& e = pending_[i];
    auto f = files[i];
    f.setPath(Bytes(e.path));
    f.setFs(e.fs);
    f.setDev(e.dev);
    f.setIno(e.ino);
    f.setSize(e.size);
    f.setMtimeNs(e.mtime_ns);
    f.setCtimeNs(e.ctime_ns);
    f.setNlink(e.nlink);
    f.setInodeFlags(e.inode_flags);
    f.setUid(e.uid);
    f.setGid(e.gid);
    auto ex = f.initExtents(unsigned(e.extents.size()));
    for (unsigned j = 0; j < e.extents.size(); ++j) {
      ex[j].setLogical(e.extents[j].logical);
      ex[j].setPhysical(e.extents[j].physical);
      ex[j].setLength(e.extents[j].length);
      ex[j].setFlags(e.extents[j].flags);
    }
    f.setHashed(e.hashed);
    f.setReused(e.reused);
    f.setSizePaired(e.size_paired);
    f.setHashHi(e.hash.hi);
    f.setHashLo(e.hash.lo);
    if (!e.block_hashes.empty()) {
      auto d = f.initBlockHashes(unsigned(e.block_hashes.size() * 16));
      for (size_t j = 0; j < e.block_hashes.size(); ++j) {
        std::memcpy(d.begin() + j * 16, &e.block_hashes[j].hi, 8);
        std::memcpy(d.begin() + j * 16 + 8, &e.block_hashes[j].lo, 8);
      }
    }
    f.setSumKind(e.sum_kind);
    f.setKeyKind(e.key_kind);
    if (!e.sector_sums.empty())
      f.setSectorSums(Bytes(e.sector_sums));
    f.setError(e.error);
    f.setErrnum(e.errnum);
    auto op = f.initOtherPaths(unsigned(e.other_paths.size()));
    for (unsigned j = 0; j < e.other_paths.size(); ++j) op.set(j, Bytes(e.other_paths[j]));
  }
  pending_.clear();
  batch_bytes_ = 0;
  totals_.batches++;
  return frames_.Write(msg);
}

Status IndexWriter::Finish() {
  OANS_RETURN_IF_ERROR(FlushBatch());
  OANS_RETURN_IF_ERROR(FlushCopy());
  capnp::MallocMessageBuilder msg;
  auto t = msg.initRoot<schema::IndexFrame>().initTrailer();
  t.setRecords(totals_.records);
  t.setBatches(totals_.batches);
  t.setErrors(totals_.errors);
  t.setBytes(totals_.bytes);
  OANS_RETURN_IF_ERROR(frames_.Write(msg));
  return frames_.Wait();
}

namespace {

// One read of an index, frame by frame: where it is (before the first header, inside a
// section, after a trailer) and what it has counted of the current section.
struct IndexReading {
  enum State { kWantHeader, kInBody, kAfterTrailer };
  IndexReading(const std::string& name, int fd, const IndexReadOptions& options,
               const std::function<Status(const IndexHeader&)>& on_header,
               const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch)
      : name(name), fd(fd), options(options), on_header(on_header), on_batch(on_batch) {}
  const std::string& name;
  int fd;
  const IndexReadOptions& options;
  const std::function<Status(const IndexHeader&)>& on_header;
  const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch;
  IndexReadResult result;
  IndexHeader header;
  IndexTotals seen;
  State state = kWantHeader;
  std::vector<FileEntry> batch;
  std::vector<IndexDir> dirs;

  Status Header(schema::IndexHeader::Reader h) {
    if (state == kInBody) return Status::Corrupt(name + " is damaged (a header in the middle of an index)");
    OANS_RETURN_IF_ERROR(DecodeHeader(h, name, &header));
    state = kInBody;
    seen = IndexTotals();
    result.sections++;
    return on_header(header);
  }

  Status Batch(schema::IndexBatch::Reader b, const FrameReadAhead::Frame& at) {
    if (state != kInBody)
      return Status::Corrupt(name + (state == kWantHeader ? " is not an oans index (no header)"
                                                          : " is damaged (records after the trailer)"));
    if (options.span) *options.span = {fd, at.offset, at.end_offset};
    if (options.on_dirs && b.getDirs().size() > 0) {
      OANS_RETURN_IF_ERROR(DecodeDirs(b, name, header, &dirs, &seen));
      OANS_RETURN_IF_ERROR(options.on_dirs(header, dirs));
    }
    if (options.on_extents && b.getExtents().size() > 0) {
      std::vector<IndexExtent> ext;
      for (auto e : b.getExtents()) {
        if (e.getFs() >= header.filesystems.size()) return Status::Corrupt(name + " is damaged (a data extent of no filesystem)");
        ext.push_back({e.getFs(), e.getBytenr(), e.getDiskBytes(), e.getRefs(), e.getRoRefs()});
      }
      OANS_RETURN_IF_ERROR(options.on_extents(header, ext));
    }
    seen.batches++;
    RecordsChecked checked = RecordsChecked::kNo;
    if (options.keep_encoded) {
      IndexTotals counted;
      OANS_RETURN_IF_ERROR(CountBatch(b, name, header, &counted));
      checked = RecordsChecked::kYes;
      if (options.keep_encoded(header, FrameBatchView(b.getFiles()))) {
        seen.records += counted.records;
        seen.errors += counted.errors;
        seen.bytes += counted.bytes;
        counted.batches = 1;
        return options.on_encoded(header, counted);
      }
    }
    OANS_RETURN_IF_ERROR(DecodeBatch(b, name, header, &batch, &seen, checked));
    return on_batch(header, batch);
  }

  Status Trailer(schema::Trailer::Reader t) {
    if (state != kInBody) return Status::Corrupt(name + " is damaged (unexpected trailer)");
    OANS_RETURN_IF_ERROR(CheckTrailer(t, name, seen));
    result.totals.records += seen.records;
    result.totals.batches += seen.batches;
    result.totals.errors += seen.errors;
    result.totals.bytes += seen.bytes;
    result.totals.dirs += seen.dirs;
    state = kAfterTrailer;
    return Status::Ok();
  }

  // Decodes one frame's message; a message that does not parse is damage at its offset.
  Status Frame(FrameReader& frames, const FrameReadAhead::Frame& next) {
    Status st;
    KJ_IF_MAYBE(exc, kj::runCatchingExceptions([&]() {
      capnp::FlatArrayMessageReader reader(next.words, FrameReader::Options(next.words.size()));
      auto frame = reader.getRoot<schema::IndexFrame>();
      switch (frame.which()) {
        case schema::IndexFrame::HEADER: st = Header(frame.getHeader()); return;
        case schema::IndexFrame::BATCH: st = Batch(frame.getBatch(), next); return;
        case schema::IndexFrame::TRAILER: st = Trailer(frame.getTrailer()); return;
        default: st = Status::Corrupt(name + " is damaged or from a newer oans (unknown message kind)");
      }
    })) {
      return frames.DamagedAt(next.offset,
                              "holds a message that does not parse (" + std::string(exc->getDescription().cStr()) + ")");
    }
    if (st.code() == Status::Code::kCorrupt && state != kWantHeader)  // not "not an index"
      return Status::Corrupt(st.message() + "; the bad frame starts at byte " + std::to_string(next.offset));
    return st;
  }
};

}  // namespace

Result<IndexReadResult> ReadIndex(
    const std::string& path, const IndexReadOptions& options,
    const std::function<Status(const IndexHeader&)>& on_header,
    const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch) {
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  FrameReader frames((*in)->fd(), (*in)->name());
  const std::string& name = (*in)->name();
  IndexReading r(name, (*in)->fd(), options, on_header, on_batch);
  FrameReadAhead ahead(frames);
  uint64_t offset_of_cut = 0;
  for (uint64_t frame_no = 0;; ++frame_no) {
    auto next = ahead.Next();
    offset_of_cut = next.offset_of_cut;
    if (!next.status.ok()) {
      Status s = next.status;
      if (frame_no == 0 && s.code() == Status::Code::kCorrupt)
        return Status::Corrupt(name + " is not an oans index (" + s.message() + ")");
      // Only a cut (the file ends inside a frame, as an interrupted scan leaves it) is
      // accepted as truncation; a frame that fails its checksum or to decode is damage.
      if (r.state == IndexReading::kInBody && options.allow_truncated && s.code() == Status::Code::kCorrupt &&
          next.cut) {
        r.result.truncated = true;
        r.result.cut_at = next.offset_of_cut;
        return r.result;
      }
      return s;
    }
    if (next.end) break;
    OANS_RETURN_IF_ERROR(r.Frame(frames, next));
  }
  if (r.state == IndexReading::kWantHeader) return Status::Corrupt(name + " is empty: not an oans index");
  if (r.state == IndexReading::kInBody) {
    if (options.allow_truncated) {
      r.result.truncated = true;
      r.result.cut_at = offset_of_cut;
      return r.result;
    }
    return Status::Corrupt(name + " is truncated (no trailer): the scan that wrote it did not finish; "
                           "re-run oans-scan (it can reuse this file with --previous)");
  }
  return r.result;
}

Result<IndexContents> ReadIndexFile(const std::string& path, const IndexReadOptions& options) {
  IndexContents c;
  auto r = ReadIndex(
      path, options, [&](const IndexHeader& h) { c.header = h; return Status::Ok(); },
      [&](const IndexHeader&, std::vector<FileEntry>& b) {
        for (auto& e : b) c.files.push_back(std::move(e));
        return Status::Ok();
      });
  if (!r.ok()) return r.status();
  c.result = *r;
  return c;
}

}  // namespace oans
