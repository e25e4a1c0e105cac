// The frames of an index (format/index.capnp) checked and decoded: the header, a batch's
// file and directory records (or read in place, BatchView) and the trailer's counts; used
// by the index readers (index_file.cc, index_tail.cc) alone.
#pragma once

#include <string>
#include <vector>

#include "format/index.capnp.h"
#include "lib/format/index_file.h"

namespace oans {

// Decodes the header frame `h` of index `name` into *header, refusing another kind of
// file, a newer format and an impossible block size.
Status DecodeHeader(schema::IndexHeader::Reader h, const std::string& name, IndexHeader* header);
// Whether a section's trailer counts the records and batches that were read.
Status CheckTrailer(schema::Trailer::Reader t, const std::string& name, const IndexTotals& seen);

// The checks a record must pass, made on the frame's bytes: a known filesystem, paths
// that are absolute and clean (lib/base/paths.h), block hashes and sector sums that fit
// the file's size, known kinds of sums and keys.
Status CheckRecord(schema::FileRecord::Reader f, const std::string& name, const IndexHeader& header);
// Checks and counts the records of batch frame `b` without decoding them.
Status CountBatch(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                  IndexTotals* counted);
// Whether CountBatch already checked a batch's records.
enum class RecordsChecked { kNo, kYes };
// Decodes batch frame `b` into *batch (emptied first), counting its records in *seen,
// each checked first (CheckRecord) unless `checked`.
Status DecodeBatch(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                   std::vector<FileEntry>* batch, IndexTotals* seen, RecordsChecked checked = RecordsChecked::kNo);
// Decodes the directory records of batch frame `b` into *dirs (emptied first), each with
// a known filesystem and a clean absolute path.
Status DecodeDirs(schema::IndexBatch::Reader b, const std::string& name, const IndexHeader& header,
                  std::vector<IndexDir>* dirs, IndexTotals* seen);

// The file records of a batch frame, read in place.
class FrameBatchView final : public BatchView {
 public:
  explicit FrameBatchView(capnp::List<schema::FileRecord>::Reader files) : files_(files) {}
  size_t size() const override { return files_.size(); }
  uint32_t fs(size_t i) const override { return files_[unsigned(i)].getFs(); }
  uint64_t ino(size_t i) const override { return files_[unsigned(i)].getIno(); }
  uint64_t dev(size_t i) const override { return files_[unsigned(i)].getDev(); }
  bool has_error(size_t i) const override { return files_[unsigned(i)].getError().size() != 0; }
  std::string_view path(size_t i) const override { return ViewOf(files_[unsigned(i)].getPath()); }
  size_t other_path_count(size_t i) const override { return files_[unsigned(i)].getOtherPaths().size(); }
  std::string_view other_path(size_t i, size_t j) const override {
    return ViewOf(files_[unsigned(i)].getOtherPaths()[unsigned(j)]);
  }
  std::optional<uint64_t> first_physical(size_t i) const override {
    auto ex = files_[unsigned(i)].getExtents();
    if (ex.size() == 0) return std::nullopt;
    return ex[0].getPhysical();
  }
  bool hashed(size_t i) const override { return files_[unsigned(i)].getHashed(); }
  Hash128 hash(size_t i) const override {
    return {files_[unsigned(i)].getHashHi(), files_[unsigned(i)].getHashLo()};
  }
  std::string_view block_hashes(size_t i) const override { return ViewOf(files_[unsigned(i)].getBlockHashes()); }
  std::string_view sector_sums(size_t i) const override { return ViewOf(files_[unsigned(i)].getSectorSums()); }
  void StatOf(size_t i, FileEntry* e) const override;

 private:
  static std::string_view ViewOf(capnp::Data::Reader d) {
    return {reinterpret_cast<const char*>(d.begin()), d.size()};
  }
  capnp::List<schema::FileRecord>::Reader files_;
};

}  // namespace oans
