// The census of a btrfs scan's data extents: every range of a btrfs filesystem the
// records' extents point at, noted as records are written; after the last record, the
// data extents holding them and every reference to each, in any subvolume, scanned or
// not (lib/btrfs/backrefs.h), written as IndexExtent batches. With them, the plan counts
// the disk bytes an extent frees only once its last reference goes. The header says
// the census was made (refs_known) and carries each btrfs subvolume's facts for the
// plan's metadata estimate. Past `limit` ranges, nothing more is noted and no extent
// is written: the plan then knows no references and says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "lib/base/observer.h"
#include "lib/base/sys.h"
#include "lib/format/index_file.h"

namespace oans {

class RefCensus {
 public:
  // `look_up_all`: every extent's references by LOGICAL_INO_V2 (DataExtentsOptions).
  RefCensus(uint64_t limit, bool look_up_all) : limit_(limit), look_up_all_(look_up_all) {}
  // Notes the ranges record `e` points at. Safe from several threads.
  void Note(const FileEntry& e);
  // Fills header.subvolumes and header.refs_known for the btrfs filesystems of
  // header.filesystems (CAP_SYS_ADMIN); leaves both unset when one cannot be known.
  void Describe(Sys& sys, IndexHeader* header);
  // Writes the data extents of the ranges noted on each btrfs filesystem.
  Status Write(const IndexHeader& header, const std::atomic<bool>* stop, Observer* observer, IndexWriter* out);
  // After Write: the extents written, and of those, the ones counted by LOGICAL_INO_V2.
  uint64_t extents() const { return extents_; }
  uint64_t looked_up() const { return looked_up_; }

 private:
  struct Range {
    uint32_t fs;
    uint64_t start, end;
    bool operator<(const Range& o) const {
      return fs != o.fs ? fs < o.fs : start != o.start ? start < o.start : end < o.end;
    }
  };
  uint64_t limit_;
  bool look_up_all_;
  uint64_t extents_ = 0, looked_up_ = 0;
  std::mutex mu_;
  std::vector<Range> ranges_;
  bool overflow_ = false;
};

}  // namespace oans
