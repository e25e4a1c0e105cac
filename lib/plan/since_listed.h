// `--since OLD` without reading OLD: when the one index to plan was written by a scan
// that followed btrfs changes from OLD and listed the files it found new or changed
// (IndexHeader::changed_known), that list is what a merge join with OLD (since.h) would
// find. The changed files' records are read first, from where the header says they start
// (ReadIndexTail), and their keys kept as the load would make them: whole-file hashes,
// block hashes of written blocks and the hashes of their anchors (anchors.h). The load
// then takes, of the other files, only those that share one of these keys. Every
// whole-file, block or anchor group with a changed member thus has all its members, and
// the planner plans nothing else (a group without a changed member is left out either
// way), so the plan is the one the join gives; only the counts of files differ
// (PlanStats::since_left_out). When the list cannot be used (its records are not where
// the header says, the file holds several indexes, the keys would not fit the since line of
// the memory budget, budget.h), the load says why and joins. The key sets are hashed with a seed drawn
// per run, so an index cannot be made to collide them. Single-threaded; used by the load
// stage (load.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/plan/planner.h"

namespace oans {

class ListedChanges {
 public:
  // When `now`, the header of the one index `o` plans, lists its changes since `old`,
  // the header of --since: the list, else nullopt (the load joins the two indexes).
  static std::optional<ListedChanges> Of(const PlanOptions& o, const IndexHeader& old, const IndexHeader& now);
  // Reads the changed files' records and keeps their keys. *why_not says why the list
  // cannot be used instead ("" when it can); an error only when stopped.
  Status ReadChanged(const std::atomic<bool>* stop, std::string* why_not);
  // The index's creation time as its header says.
  int64_t created_ns() const { return created_ns_; }
  size_t listed() const { return changed_.size(); }
  bool Changed(uint32_t fs, uint64_t ino) const { return changed_.count(Key(fs, ino)) != 0; }
  // Whether a changed file's record read by the load is the one read first (its
  // whole-file key was kept): a check that both reads saw the same records.
  bool SameAsRead(const FileEntry& e) const { return !e.hashed || whole_.count(e.hash) != 0; }
  // Whether the load takes this file: changed, or sharing a key with a changed one.
  bool Wanted(const FileEntry& e) const;
  // Whether any file of a batch read in place is taken.
  bool AnyWanted(const BatchView& v) const;

 private:
  using InodeKey = std::pair<uint32_t, uint64_t>;
  struct Seeded {
    uint64_t seed = 0;
    size_t operator()(const InodeKey& k) const;
    size_t operator()(const Hash128& h) const;
    size_t operator()(uint64_t v) const;
  };
  static InodeKey Key(uint32_t fs, uint64_t ino) { return {fs, ino}; }
  explicit ListedChanges(uint64_t seed);
  void Keep(const FileEntry& e);
  bool Shares(bool hashed, const Hash128& hash, std::string_view blocks, std::string_view sums) const;

  std::string path_, since_;
  int64_t created_ns_ = 0;
  uint64_t changed_at_ = 0, block_size_ = 0, budget_ = 0;
  bool blocks_wanted_ = true;
  std::unordered_set<InodeKey, Seeded> changed_;
  std::unordered_set<Hash128, Seeded> whole_, blocks_;
  std::unordered_set<uint64_t, Seeded> anchors_;
};

}  // namespace oans
