// The planner's memory budget: one table splits --memory among its stores.
// Each line is a share of --memory, in 64ths; the shares add up to 64.
// A line may serve stages that never run at once.
// Per-file state (flags, sparse offsets) is taken from the details line. File paths have
// no line: kPathsInMemory (details.h) in the fixed overhead, then a temporary file.
// Beyond the table: a fixed overhead (kFixedOverhead), not growing with files.
#pragma once

#include <array>
#include <cstdint>

namespace oans {

enum class Use {
  kDetails,   // file details (details.h), and the per-file state
  kWhole,     // whole-file keys: load -> group
  kInodes,    // inode keys: load -> duplicate inodes
  kBlocks,    // block keys: load -> blocks
  kAnchors,   // anchor keys: load -> anchors
  kSums,      // sector sums and where each file's are
  kSince,     // --since: the join with the old index, or the listed changes
  kPairs,     // pairs of blocks, then of anchors
  kRuns,      // runs of pairs, then of anchors
  kWeigh,     // runs of one pair of files being weighed (frees.h)
  kOps,       // operations: source, blocks, anchors -> rounds
  kOpStore,   // operations with several destinations
  kPreload,   // details fetched for a pass (group, rounds)
  kCount
};

struct BudgetLine {
  Use use;
  uint32_t share;  // 64ths of --memory
};

inline constexpr std::array<BudgetLine, size_t(Use::kCount)> kBudgetTable = {{
    {Use::kDetails, 10},
    {Use::kWhole, 6},
    {Use::kInodes, 3},
    {Use::kBlocks, 7},
    {Use::kAnchors, 3},
    {Use::kSums, 3},
    {Use::kSince, 4},
    {Use::kPairs, 6},
    {Use::kRuns, 5},
    {Use::kWeigh, 2},
    {Use::kOps, 7},
    {Use::kOpStore, 2},
    {Use::kPreload, 6},
}};

constexpr bool BudgetAddsUp() {
  uint32_t sum = 0;
  for (size_t i = 0; i < kBudgetTable.size(); ++i) {
    if (size_t(kBudgetTable[i].use) != i) return false;
    sum += kBudgetTable[i].share;
  }
  return sum == 64;
}
static_assert(BudgetAddsUp(), "the budget table must list every use once and add up to 64");

// Per-file state taken from the details line, in bits per file.
// Eight flags, and one 8-byte offset per 32 files (details.h).
inline constexpr uint64_t kBitsPerFile = 8 + 2;

// Memory beyond --memory, whatever the number of files.
// Code, the index reader, caches, one chunk per store and the packer's batch.
// tests/tools/plan_memory_test.sh checks it.
inline constexpr uint64_t kFixedOverhead = 32ull << 20;

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t memory) : memory_(memory) {}
  uint64_t operator[](Use u) const { return memory_ / 64 * kBudgetTable[size_t(u)].share; }
  uint64_t memory() const { return memory_; }

 private:
  uint64_t memory_;
};

}  // namespace oans
