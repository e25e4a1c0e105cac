// `--since OLD` without reading OLD.
// A scan that followed btrfs changes from OLD lists the files it found changed.
// The index header has that list (IndexHeader::changed_known).
// It is what a merge join with OLD (since.h) would find.
// The changed files' records are read first (ReadIndexTail).
// Their keys are kept as the load would make them.
// Those are whole-file hashes, written blocks' hashes and anchor hashes (anchors.h).
// Of the other files, the load then takes only those sharing one of these keys.
// Every group with a changed member thus has all its members.
// The planner plans nothing else: groups without a changed member are left out.
// So the plan is the join's; only the counts of files differ.
// Those left out are counted in PlanStats::since_left_out.
// When the list cannot be used, the load says why and joins instead.
// Reasons: records not where the header says, several indexes in the file,
// or keys that do not fit the since line of the budget (budget.h).
// The key sets are hashed with a seed drawn per run.
// So an index cannot be made to collide them.
// Single-threaded; used by the load stage (load.h).
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
