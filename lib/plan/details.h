// File details: what the plan needs of a file beyond its sort keys.
// Identity, size, mtime, extents and where its path is.
// They are stored compactly in a RecordStore: memory up to a budget, then a file.
// They are looked up by file id, the order files were loaded in.
// Paths have a store of their own, read only for the files a plan names. It holds at
// most kPathsInMemory in memory, then no more than the piece being written: most paths
// are never read (a plan names few of the files of a tree shared already), and those a
// pass needs are read back in one sequential pass (Preload).
// Owned by the planner's PlanState; single-threaded.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/base/spill.h"
#include "lib/base/sys.h"
#include "lib/plan/budget.h"

namespace oans {

// The paths held in memory before they go to the temporary file (about 10,000 files: a
// small plan needs no temporary file for them). Part of the planner's fixed overhead.
inline constexpr uint64_t kPathsInMemory = uint64_t(1) << 20;
// Fewer files needed than this, Preload leaves their paths to be read one by one: less
// than reading the whole file of a large tree's paths back.
inline constexpr size_t kFewPaths = 1024;

// What the plan needs of a file beyond its sort keys. Kept in a RecordStore (memory,
// then a temporary file), looked up by file id. Paths, needed only for the files a plan
// names and for reports, are kept apart.
struct Detail {
  uint64_t path_at = 0;  // offset of the path in the path store
  uint32_t fs = 0;  // index into the plan's filesystems (uuid + subvolume)
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
  uint32_t nlink = 0;
  bool unread = false;  // paired by size alone (FileEntry::size_paired)
  uint64_t first_physical = UINT64_MAX;  // PhysicalAt(extents, 0)
  std::vector<FiemapExtent> extents;  // sorted by logical offset
};

// Encoded as varints, the mtime as 8 bytes, and the extents as lib/base/extent_code.h
// writes them. About a third of a fixed layout's size.
void EncodeDetail(const Detail& d, std::string* out);
Status DecodeDetail(std::string_view in, Detail* d);

// File details by id, with a small cache of recent lookups. Before a stage that needs
// the details (or paths) of many files in an order unlike the ids, Preload fetches the
// records of those files in one sequential pass into memory, within a budget; the rest
// are read one by one.
class Details {
 public:
  // `budget` holds the records and the per-file state (kBitsPerFile, budget.h).
  Details(const std::string& dir, uint64_t budget, uint64_t path_budget)
      : store_(dir, budget), paths_(dir, path_budget), budget_(budget) {}
  // Stores `d` (setting its path_at), `path` and the file's other hardlinks; returns the
  // file's id.
  Result<uint32_t> Add(Detail& d, const std::string& path, const std::vector<std::string>& other_paths = {});
  size_t size() const { return size_; }
  Result<std::shared_ptr<const Detail>> Get(uint32_t id);
  Result<std::string> Path(uint32_t id);
  // The path, then the other hardlinks the scan saw.
  Result<std::vector<std::string>> Names(uint32_t id);
  // Keeps the details (and, with `paths`, the paths) of the files marked in `needed` in
  // memory, as far as `budget` bytes go, those of a store that went to its file: one
  // sequential pass each. Records of both stores are in id order. Once `stop` (may be
  // null) is set, returns Interrupted.
  Status Preload(const std::vector<bool>& needed, uint64_t budget, bool paths, const std::atomic<bool>* stop = nullptr);
  bool spilled() const { return store_.spilled(); }
  bool paths_spilled() const { return paths_.spilled(); }
  // Visits every file's details in id order, in one sequential pass.
  Status ForEach(const std::function<Status(uint32_t id, const Detail&)>& visit) const;

 private:
  // Records of some ids, in memory: an arena of length-prefixed records.
  struct Preloaded {
    std::string arena;
    std::vector<std::pair<uint32_t, uint64_t>> index;  // id -> offset in arena, ids ascending
    Status Load(const RecordStore& store, const std::vector<bool>& needed, uint64_t budget, const std::atomic<bool>* stop);
    bool Find(uint32_t id, std::string* record) const;
  };
  static constexpr size_t kCache = 1024;
  // One offset per kStride files; the others are found from it.
  static constexpr uint32_t kStride = 32;
  RecordStore store_, paths_;
  uint64_t budget_;
  size_t size_ = 0;
  ChunkedArray<uint64_t> offsets_;
  std::unordered_map<uint32_t, std::shared_ptr<const Detail>> cache_;
  Preloaded details_, paths_pre_;
  std::string scratch_, encoded_;
};

}  // namespace oans
