// The block stages (lib/plan/blocks.h): identical blocks -> pairs -> runs -> units.
#include "lib/plan/blocks.h"

#include <gtest/gtest.h>

#include "lib/plan/ops.h"
#include "tests/lib/plan/stage_util.h"

namespace oans {
namespace {

constexpr uint64_t kBs = 128 * 1024;

// Block keys of file `id` whose block b has content blocks[b] (equal = identical).
void AddBlocks(PlanState& st, uint32_t id, uint64_t physical, const std::vector<uint64_t>& blocks) {
  for (uint32_t b = 0; b < blocks.size(); ++b) {
    const uint64_t p = physical + b * kBs;
    ASSERT_OK(st.blocks.Add({{blocks[b], 0}, 0, id, b, 0, p, p + kBs - 1}));
  }
}

TEST(Blocks, ConsecutiveIdenticalBlocksBecomeOneRun) {
  test::Stage s;
  PlanState& st = *s.st;
  const uint32_t a = s.AddFile(6 * kBs, 1 << 30), b = s.AddFile(6 * kBs, 2u << 30);
  AddBlocks(st, a, 1 << 30, {1, 2, 3, 4, 5, 6});
  AddBlocks(st, b, 2u << 30, {9, 2, 3, 4, 8, 7});  // blocks 1-3 of a at 1-3 of b
  ExternalSorter<PairKey, PairLess> pairs(st.dir, 1 << 20);
  ASSERT_OK(PairBlocks(st, &pairs));
  EXPECT_EQ(pairs.size(), 3u);
  EXPECT_EQ(s.stats.block_groups, 3u);
  ExternalSorter<RunKey, RunLess> runs(st.dir, 1 << 20);
  ASSERT_OK(RunsOfPairs(st, &pairs, &runs));
  std::vector<RunKey> got;
  ASSERT_OK(runs.ForEach([&](const RunKey& r) { return got.push_back(r), Status::Ok(); }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, kBs);
  EXPECT_EQ(got[0].length, 3 * kBs);
  EXPECT_EQ(got[0].dst_offset, kBs);
  ASSERT_OK(UnitsOfRuns(st, &runs));
  EXPECT_EQ(s.stats.planned_bytes, 3 * kBs);
}

TEST(Blocks, SharedUnchangedAndWholeFileDestinationsLeftOut) {
  test::Stage s;
  PlanState& st = *s.st;
  const uint32_t a = s.AddFile(2 * kBs, 1 << 30), b = s.AddFile(2 * kBs, 2u << 30), c = s.AddFile(2 * kBs, 3u << 30);
  AddBlocks(st, a, 1 << 30, {1, 2});
  AddBlocks(st, b, 1 << 30, {1, 5});   // block 0 already shares a's extent
  AddBlocks(st, c, 3u << 30, {6, 2});  // c: a whole-file destination elsewhere
  st.is_dest[c] = true;
  ASSERT_OK(test::PlanBlocks(st));
  EXPECT_EQ(s.stats.planned_bytes, 0u);
  EXPECT_EQ(s.stats.shared_bytes, kBs);
  // Nothing new since --since: not even counted.
  test::Stage t;
  const uint32_t x = t.AddFile(kBs, 1 << 30), y = t.AddFile(kBs, 2u << 30);
  AddBlocks(*t.st, x, 1 << 30, {1});
  AddBlocks(*t.st, y, 2u << 30, {1});
  t.st->changed[x] = t.st->changed[y] = false;
  ASSERT_OK(test::PlanBlocks(*t.st));
  EXPECT_EQ(t.stats.block_groups, 0u);
}

TEST(Blocks, ARunWithinOneFileDoesNotOverlapItsCopy) {
  test::Stage s;
  const uint32_t a = s.AddFile(4 * kBs, 1 << 30);
  AddBlocks(*s.st, a, 1 << 30, {1, 1, 1, 1});  // the same block four times
  ASSERT_OK(test::PlanBlocks(*s.st));
  std::string scratch;
  ASSERT_OK(s.st->ops.ForEach([&](const OpKey& k) {
    PlanOp op;
    OANS_RETURN_IF_ERROR(OpOfKey(*s.st, k, &scratch, &op));
    for (const auto& d : op.dests)
      EXPECT_LE(op.offset + op.length, d.offset) << "source range overlaps its destination";
    return Status::Ok();
  }));
  EXPECT_GT(s.stats.planned_bytes, 0u);
}

}  // namespace
}  // namespace oans
