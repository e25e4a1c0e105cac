// The ops stage (lib/plan/ops.h): units split into operations that fit a round and one
// FIDEDUPERANGE call, with physical addresses, queued by the source's physical offset.
#include "lib/plan/ops.h"

#include <gtest/gtest.h>

#include "tests/lib/plan/stage_util.h"

namespace oans {
namespace {

std::vector<PlanOp> Queued(PlanState& st) {
  std::vector<PlanOp> out;
  std::string scratch;
  EXPECT_OK(st.ops.ForEach([&](const OpKey& k) {
    PlanOp op;
    OANS_RETURN_IF_ERROR(OpOfKey(st, k, &scratch, &op));
    out.push_back(op);
    return Status::Ok();
  }));
  return out;
}

TEST(Ops, SplitsByDestinationsAndRoundSize) {
  test::Stage s(64ull << 20, 1u << 20);  // rounds of 1 MiB
  const uint32_t src = s.AddFile(4u << 20, 1u << 30);
  Unit u;
  u.src = src;
  u.offset = 0;
  u.length = 4u << 20;
  for (int i = 0; i < 300; ++i) u.dests.push_back({s.AddFile(4u << 20, (2u << 30) + (uint64_t(i) << 23)), 0, 0});
  ASSERT_OK(AddOps(*s.st, u));
  const std::vector<PlanOp> ops = Queued(*s.st);
  uint64_t planned = 0;
  for (const auto& op : ops) {
    EXPECT_LE(op.dests.size(), kMaxDedupeDests);  // the kernel's limit, below 1 MiB / 4 KiB - 1
    EXPECT_LE(op.length * (1 + op.dests.size()), 1u << 20);
    EXPECT_EQ(op.length % 4096, 0u);
    EXPECT_EQ(op.physical, (1u << 30) + op.offset);
    for (const auto& d : op.dests) EXPECT_EQ(d.physical % (1u << 23), d.offset);
    planned += op.length * op.dests.size();
  }
  EXPECT_EQ(planned, 300ull * (4u << 20));
  EXPECT_EQ(s.stats.planned_bytes, planned);
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LE(ops[i - 1].physical, ops[i].physical);
  EXPECT_TRUE(s.st->op_files[src]);
}

TEST(Ops, StoredOperationsRoundTrip) {
  PlanOp op{7, 4096, 8192, 123456, {{1, 0, 99}, {2, 4096, UINT64_MAX}}};
  PlanOp back;
  const std::string rec = EncodeOp(op);
  ASSERT_OK(DecodeOp(rec, &back));
  EXPECT_EQ(back.source, 7u);
  EXPECT_EQ(back.length, 8192u);
  ASSERT_EQ(back.dests.size(), 2u);
  EXPECT_EQ(back.dests[1].physical, UINT64_MAX);
  EXPECT_FALSE(DecodeOp(rec.substr(0, rec.size() - 1), &back).ok());
}

}  // namespace
}  // namespace oans
