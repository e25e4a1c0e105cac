// A PlanState for tests of one planner stage, with files added directly (no index).
#pragma once

#include <memory>
#include <string>

#include "lib/plan/anchors.h"
#include "lib/plan/blocks.h"
#include "lib/plan/state.h"
#include "tests/lib/test_util.h"

namespace oans::test {

struct Stage {
  explicit Stage(uint64_t memory = 64ull << 20, uint64_t round_size = 32u << 20) {
    options.memory = memory;
    options.round_size = round_size;
    options.temp_dir = dir.path();
    st = std::make_unique<PlanState>(options, &observer, &stats);
    FsRecord fs;
    fs.uuid = "U";
    fs.subvolume = 5;
    fs.block_size = 4096;
    st->header.filesystems = {fs};
    st->header.block_size = 128 * 1024;
    st->header.round_size = round_size;
  }
  // A file of `size` bytes in one extent at `physical`; returns its id.
  uint32_t AddFile(uint64_t size, uint64_t physical, uint64_t ino = 0) {
    Detail d;
    d.ino = ino ? ino : 1000 + st->details.size();
    d.size = size;
    d.extents = {{0, physical, (size + 4095) / 4096 * 4096, kExtentLast}};
    d.first_physical = physical;
    auto id = st->details.Add(d, "/r/f" + std::to_string(st->details.size()));
    EXPECT_TRUE(id.ok());
    for (auto* v : {&st->changed, &st->dropped, &st->is_dest, &st->op_files}) v->push_back(v == &st->changed);
    return *id;
  }
  // Sector sums for file `id` (4 bytes each), stored as the load stage stores them.
  void SetSums(uint32_t id, const std::string& sums) {
    EXPECT_TRUE(st->AddSums(id, sums).ok());
  }
  TempDir dir;
  PlanOptions options;
  Observer observer;
  PlanStats stats;
  std::unique_ptr<PlanState> st;
};

// The block steps, as RunPlan runs them.
inline Status PlanBlocks(PlanState& st) {
  ExternalSorter<PairKey, PairLess> pairs(st.dir, st.budget[Use::kPairs]);
  ExternalSorter<RunKey, RunLess> runs(st.dir, st.budget[Use::kRuns]);
  OANS_RETURN_IF_ERROR(PairBlocks(st, &pairs));
  OANS_RETURN_IF_ERROR(RunsOfPairs(st, &pairs, &runs));
  return UnitsOfRuns(st, &runs);
}

// The anchor steps, as RunPlan runs them.
inline Status PlanAnchors(PlanState& st) {
  ExternalSorter<PairKey, PairLess> pairs(st.dir, st.budget[Use::kPairs]);
  ExternalSorter<RunKey, RunLess> runs(st.dir, st.budget[Use::kRuns]);
  OANS_RETURN_IF_ERROR(PairsOfAnchors(st, &pairs));
  OANS_RETURN_IF_ERROR(RunsOfAnchors(st, &pairs, &runs));
  return UnitsOfRuns(st, &runs);
}

}  // namespace oans::test
