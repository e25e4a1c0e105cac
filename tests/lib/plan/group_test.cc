// The grouping stages (lib/plan/group.h): duplicate inodes dropped, whole-file groups.
#include "lib/plan/group.h"

#include <gtest/gtest.h>

#include "tests/lib/plan/stage_util.h"

namespace oans {
namespace {

TEST(Group, ALaterRecordOfTheSameInodeIsDropped) {
  test::Stage s;
  PlanState& st = *s.st;
  const uint32_t a = s.AddFile(8192, 1 << 20, 7), b = s.AddFile(8192, 2 << 20, 8), c = s.AddFile(8192, 1 << 20, 7);
  st.sections = 2;
  for (uint32_t id : {c, b, a}) ASSERT_OK(st.inodes.Add({id == b ? 8u : 7u, 0, id}));
  ASSERT_OK(DropDuplicateInodes(st));
  EXPECT_EQ(st.dropped, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(s.stats.duplicate_inodes, 1u);
  EXPECT_EQ(s.stats.files, 2u);
}

TEST(Group, EqualSizeAndHashFormAGroupWithOneSource) {
  test::Stage s;
  PlanState& st = *s.st;
  std::vector<uint32_t> ids;
  for (uint64_t p : {5u << 20, 1u << 20, 3u << 20, 9u << 20}) ids.push_back(s.AddFile(8192, p));
  const Hash128 same{1, 2}, other{3, 4};
  for (uint32_t id : ids) ASSERT_OK(st.whole.Add({0, id, 8192, id == ids[3] ? other : same, 0}));
  std::vector<GroupReport> reports;
  ASSERT_OK(GroupWholeFiles(st, &reports));
  EXPECT_EQ(s.stats.whole_groups, 1u);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].source, "/r/f1");  // earliest on disk
  EXPECT_EQ(reports[0].dests, (std::vector<std::string>{"/r/f2", "/r/f0"}));  // in physical order
  EXPECT_EQ(st.is_dest, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(s.stats.planned_bytes, 2u * 8192);
  EXPECT_EQ(st.ops.size(), 1u);  // both destinations in one operation
}

TEST(Group, AGroupSharingOneLayoutNeedsNoOperation) {
  test::Stage s;
  PlanState& st = *s.st;
  const uint32_t a = s.AddFile(8192, 1 << 20), b = s.AddFile(8192, 1 << 20);
  for (uint32_t id : {a, b}) ASSERT_OK(st.whole.Add({0, id, 8192, {1, 2}, 77}));  // one layout hash
  ASSERT_OK(GroupWholeFiles(st, nullptr));
  EXPECT_EQ(s.stats.whole_groups, 1u);
  EXPECT_EQ(s.stats.shared_bytes, 8192u);
  EXPECT_EQ(st.ops.size(), 0u);
  EXPECT_TRUE(st.is_dest[b]);
}

}  // namespace
}  // namespace oans
