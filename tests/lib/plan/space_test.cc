// The plan's space figures (lib/plan/space.h) and the snapshot policy
// (lib/plan/snapshots.h) on synthetic indexes with a census of references.
#include "lib/plan/planner.h"

#include <gtest/gtest.h>

#include "lib/scan/hasher.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

constexpr uint64_t kSize = 128 * 1024;

// A file of one extent at `phys` holding content `content` in subvolume entry `fs`.
FileEntry File(const std::string& name, uint32_t fs, uint64_t ino, uint64_t phys, uint64_t content,
               uint32_t flags = 0) {
  FileEntry e;
  e.path = "/r/" + name;
  e.fs = fs;
  e.dev = 100 + fs;
  e.ino = ino;
  e.size = kSize;
  e.mtime_ns = e.ctime_ns = 1;
  e.nlink = 1;
  e.extents.push_back({0, phys, kSize, flags | kExtentLast});
  e.hashed = true;
  std::vector<uint64_t> c = {content, kSize};
  e.hash = HashBytes(c.data(), c.size() * 8);
  e.block_hashes.push_back({content, content * 31 + 7});
  return e;
}

FsRecord Sub(uint64_t id) {
  FsRecord f;
  f.uuid = "U";
  f.subvolume = id;
  f.dev = 100 + id;
  f.type = "btrfs";
  f.mount_point = "/r";
  return f;
}

// An index of `files` over subvolumes 5 (read-write) and 300 (read-only), both shared,
// with the census `extents` (none: no census).
void Write(const std::string& path, const std::vector<FileEntry>& files, const std::vector<IndexExtent>& extents,
           bool census = true) {
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = {Sub(5), Sub(300)};
  h.block_size = kSize;
  h.refs_known = census;
  if (census) h.subvolumes = {{false, true, 16384 * 4, 16384, 2}, {true, true, 16384 * 4, 16384, 2}};
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok());
  IndexWriter w(out->get());
  ASSERT_OK(w.WriteHeader(h));
  for (const auto& f : files) ASSERT_OK(w.Add(f));
  for (const auto& e : extents) ASSERT_OK(w.AddExtent(e));
  ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
}

PlanStats Plan(const std::string& index, SnapshotPolicy policy = SnapshotPolicy::kAll) {
  PlanOptions o;
  o.indexes = {index};
  o.snapshots = policy;
  PlanStats s;
  EXPECT_OK(RunPlan(o, nullptr, nullptr, &s));
  return s;
}

// Each test gives both files' extents the same facts: either may be the source.
// A destination's extent that a file outside the scan also references frees nothing;
// once its only other reference is in a read-only snapshot, it frees later.
TEST(PlanSpace, AnExtentFreesOnlyWhenEveryReferenceGoes) {
  TempDir dir;
  const std::vector<FileEntry> files = {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 8 << 20, 1)};
  Write(dir.Join("held.idx"), files, {{0, 1 << 20, kSize, 2, 0}, {0, 8 << 20, kSize, 2, 0}});
  PlanStats held = Plan(dir.Join("held.idx"));
  EXPECT_EQ(held.planned_bytes, kSize);
  EXPECT_TRUE(held.refs_known);
  EXPECT_EQ(held.frees_bytes, 0u);
  EXPECT_EQ(held.frees_later_bytes, 0u);
  Write(dir.Join("snap.idx"), files, {{0, 1 << 20, kSize, 2, 1}, {0, 8 << 20, kSize, 2, 1}});
  PlanStats snap = Plan(dir.Join("snap.idx"));
  EXPECT_EQ(snap.frees_bytes, 0u);
  EXPECT_EQ(snap.frees_later_bytes, kSize);
  Write(dir.Join("alone.idx"), files, {{0, 1 << 20, kSize, 1, 0}, {0, 8 << 20, kSize, 1, 0}});
  PlanStats alone = Plan(dir.Join("alone.idx"));
  EXPECT_EQ(alone.frees_bytes, kSize);
  EXPECT_EQ(alone.net_bytes, int64_t(alone.frees_bytes) - int64_t(alone.metadata_bytes));
}

// A compressed extent frees its disk bytes, not the data's.
TEST(PlanSpace, ACompressedExtentFreesItsDiskBytes) {
  TempDir dir;
  Write(dir.Join("z.idx"), {File("a", 0, 257, 1 << 20, 1, kExtentEncoded), File("b", 0, 258, 8 << 20, 1, kExtentEncoded)},
        {{0, 1 << 20, 24576, 1, 0}, {0, 8 << 20, 24576, 1, 0}});
  PlanStats s = Plan(dir.Join("z.idx"));
  EXPECT_EQ(s.planned_bytes, kSize);
  EXPECT_EQ(s.frees_bytes, 24576u);
}

// Without a census, a covered piece counts as freed, and the figures say so.
TEST(PlanSpace, WithoutCensusCoveredPiecesCount) {
  TempDir dir;
  Write(dir.Join("n.idx"), {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 8 << 20, 1)}, {}, false);
  PlanStats s = Plan(dir.Join("n.idx"), SnapshotPolicy::kAuto);
  EXPECT_FALSE(s.refs_known);
  EXPECT_EQ(s.frees_bytes, kSize);
  EXPECT_EQ(s.metadata_bytes, 0u);
}

// Two copies, each in the live subvolume and its read-only snapshot. all: both copies
// of b are destinations and b's extent goes. none: the snapshot's b is left alone, and
// its extent frees once the snapshot expires.
TEST(PlanSpace, NoneLeavesReadOnlySnapshotsAlone) {
  TempDir dir;
  Write(dir.Join("i.idx"),
        {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 64 << 20, 1), File("sa", 1, 257, 1 << 20, 1),
         File("sb", 1, 258, 64 << 20, 1)},
        {{0, 1 << 20, 32 << 20, 2, 1}, {0, 64 << 20, 32 << 20, 2, 1}});
  PlanStats all = Plan(dir.Join("i.idx"), SnapshotPolicy::kAll);
  EXPECT_EQ(all.planned_bytes, 2 * kSize);
  EXPECT_EQ(all.frees_bytes, 32u << 20);
  PlanStats none = Plan(dir.Join("i.idx"), SnapshotPolicy::kNone);
  EXPECT_EQ(none.planned_bytes, kSize);
  EXPECT_EQ(none.frees_bytes, 0u);
  EXPECT_EQ(none.frees_later_bytes, 32u << 20);
  EXPECT_EQ(none.left_alone_bytes, kSize);
}

// Where freeing an extent costs more metadata than it frees (a small extent whose files
// sit in leaves shared with a snapshot), auto plans nothing there: its net is never
// negative, where all's is.
TEST(PlanSpace, AutoNeverPlansANegativeNet) {
  TempDir dir;
  Write(dir.Join("i.idx"),
        {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 2 << 20, 1), File("sa", 1, 257, 1 << 20, 1),
         File("sb", 1, 258, 2 << 20, 1)},
        {{0, 1 << 20, 4096, 2, 1}, {0, 2 << 20, 4096, 2, 1}});
  PlanStats all = Plan(dir.Join("i.idx"), SnapshotPolicy::kAll);
  EXPECT_EQ(all.frees_bytes, 4096u);
  EXPECT_LT(all.net_bytes, 0);
  EXPECT_GT(all.leaves_shared, 0u);
  PlanStats aut = Plan(dir.Join("i.idx"), SnapshotPolicy::kAuto);
  EXPECT_GE(aut.net_bytes, 0);
  EXPECT_EQ(aut.planned_bytes, 0u);
  EXPECT_EQ(aut.left_alone_bytes, 2 * kSize);
  EXPECT_EQ(aut.rounds, 0u);
}

// The scan had too many extents for its census, but knows the subvolumes: without
// references nothing can be weighed, so auto leaves every tree a snapshot shares alone
// and none the read-only ones; all plans everything.
TEST(PlanSpace, WithoutCensusThePolicyStillHolds) {
  TempDir dir;
  Write(dir.Join("i.idx"),
        {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 64 << 20, 1), File("sa", 1, 257, 1 << 20, 1),
         File("sb", 1, 258, 64 << 20, 1)},
        {}, true);
  EXPECT_EQ(Plan(dir.Join("i.idx"), SnapshotPolicy::kAll).planned_bytes, 2 * kSize);
  PlanStats none = Plan(dir.Join("i.idx"), SnapshotPolicy::kNone);
  EXPECT_EQ(none.planned_bytes, kSize);
  EXPECT_EQ(none.left_alone_bytes, kSize);
  PlanStats aut = Plan(dir.Join("i.idx"), SnapshotPolicy::kAuto);
  EXPECT_FALSE(aut.refs_known);
  EXPECT_EQ(aut.planned_bytes, 0u);
  EXPECT_EQ(aut.left_alone_bytes, 2 * kSize);
}

// A census entry no btrfs could hold (no reference, more read-only references than
// references, an extent over 128 MiB) is damage, not a figure to add up.
TEST(PlanSpace, ADamagedCensusIsRefused) {
  TempDir dir;
  const std::vector<FileEntry> files = {File("a", 0, 257, 1 << 20, 1), File("b", 0, 258, 8 << 20, 1)};
  const std::vector<std::vector<IndexExtent>> bad = {{{0, 1 << 20, kSize, 0, 0}},
                                                     {{0, 1 << 20, kSize, 1, 2}},
                                                     {{0, 1 << 20, uint64_t(1) << 62, 1, 0}}};
  for (size_t i = 0; i < bad.size(); ++i) {
    const std::string path = dir.Join("bad" + std::to_string(i) + ".idx");
    Write(path, files, bad[i]);
    PlanOptions o;
    o.indexes = {path};
    PlanStats s;
    Status st = RunPlan(o, nullptr, nullptr, &s);
    EXPECT_EQ(st.code(), Status::Code::kCorrupt) << i << ": " << st.message();
    EXPECT_NE(st.message().find(path + " is damaged"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace oans
