// The rounds stage (lib/plan/rounds.h): operations in physical order packed into rounds
// of at most --round-size bytes, counted for the header, then written.
#include "lib/plan/rounds.h"

#include <gtest/gtest.h>

#include "lib/plan/ops.h"
#include "tests/lib/plan/stage_util.h"

namespace oans {
namespace {

TEST(Rounds, PackedWithinTheRoundSizeInPhysicalOrder) {
  test::Stage s(64ull << 20, 1u << 20);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(s.AddFile(256u << 10, uint64_t(40 - i) << 24));  // later ids earlier on disk
  for (int i = 0; i + 1 < 40; i += 2) {
    Unit u{ids[i], 0, 256u << 10, {{ids[i + 1], 0, 0}}};
    ASSERT_OK(AddOps(*s.st, u));
  }
  auto counted = CountRounds(*s.st);
  ASSERT_OK(counted.status());
  EXPECT_EQ(*counted, 10u);  // 20 operations of 512 KiB read, two to a 1 MiB round
  const std::string path = s.dir.Join("out.plan");
  auto out = OutputFile::Open(path);
  ASSERT_OK(out.status());
  ASSERT_OK(WriteRounds(*s.st, *counted, out->get()));
  ASSERT_OK((*out)->Commit());
  EXPECT_EQ(s.stats.rounds, 10u);
  EXPECT_EQ(s.stats.ops, 20u);
  PlanHeader h;
  const auto rounds = test::ReadAllRounds(path, &h);
  ASSERT_EQ(rounds.size(), 10u);
  uint64_t last = 0;
  for (const auto& r : rounds) {
    EXPECT_LE(r.bytes, 1u << 20);
    EXPECT_EQ(r.files.size(), 2 * r.ops.size());  // each round names only its own files
    for (const auto& op : r.ops) {
      EXPECT_GE(op.physical, last);
      last = op.physical;
    }
  }
}

TEST(Rounds, AReportWritesNothing) {
  test::Stage s;
  const uint32_t a = s.AddFile(8192, 1 << 20), b = s.AddFile(8192, 2 << 20);
  ASSERT_OK(AddOps(*s.st, Unit{a, 0, 8192, {{b, 0, 0}}}));
  auto counted = CountRounds(*s.st);
  ASSERT_OK(counted.status());
  ASSERT_OK(WriteRounds(*s.st, *counted, nullptr));
  EXPECT_EQ(s.st->header.rounds, 1u);
  EXPECT_EQ(s.st->header.planned_bytes, 8192u);
}

}  // namespace
}  // namespace oans
