// `--since OLD` without reading OLD: when the one index to plan was written by a scan
// that followed btrfs changes from OLD and listed the files it found new or changed
// (IndexHeader::changed_known), that list is what a merge join with OLD (since.h) would
// find. The changed files' records are read first, from where the header says they start
// (ReadIndexTail), and their keys kept: whole-file hashes, block hashes and the hashes
// of their anchors (anchors.h). The load then takes, of the other files, only those that
// share one of these keys. Every whole-file, block or anchor group with a changed member
// thus has all its members, and the planner plans nothing else (a group without a
// changed member is left out either way), so the plan is the one the join gives; only
// the counts of files differ (PlanStats::since_left_out). Memory: the keys of the changed
// files. Single-threaded; used by the load stage (load.h).
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
  // When `o` asks --since of one index whose header lists its changes since that very
  // index: the list, else nullopt (the load joins the two indexes).
  static std::optional<ListedChanges> Of(const PlanOptions& o);
  // Reads the changed files' records and keeps their keys; an error when the index does
  // not hold every file its header lists where it says.
  Status ReadChanged(const std::atomic<bool>* stop);
  // The index's creation time as its header says.
  int64_t created_ns() const { return created_ns_; }
  bool Changed(uint32_t fs, uint64_t ino) const { return changed_.count(Key(fs, ino)) != 0; }
  // Whether the load takes this file: changed, or sharing a key with a changed one.
  bool Wanted(const FileEntry& e) const;
  // Whether any file of a batch read in place is taken.
  bool AnyWanted(const BatchView& v) const;

 private:
  struct PairHash {
    size_t operator()(const std::pair<uint32_t, uint64_t>& k) const { return k.second * 0x9e3779b97f4a7c15ull ^ k.first; }
  };
  struct Hash128Hash {
    size_t operator()(const Hash128& h) const { return h.lo ^ (h.hi * 0x9e3779b97f4a7c15ull); }
  };
  static std::pair<uint32_t, uint64_t> Key(uint32_t fs, uint64_t ino) { return {fs, ino}; }
  void Keep(const FileEntry& e);
  bool Shares(bool hashed, const Hash128& hash, std::string_view blocks, std::string_view sums) const;

  std::string path_, since_;
  int64_t created_ns_ = 0;
  uint64_t changed_at_ = 0;
  std::unordered_set<std::pair<uint32_t, uint64_t>, PairHash> changed_;
  std::unordered_set<Hash128, Hash128Hash> whole_, blocks_;
  std::unordered_set<uint64_t> anchors_;
};

}  // namespace oans
