#include "lib/plan/planner.h"

// FileSpec is filled with designated-order aggregates that leave the tail defaulted.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <sys/stat.h>
#include <set>

#include "lib/scan/hasher.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

constexpr uint32_t kBs = 128 * 1024;
constexpr uint64_t kNone = UINT64_MAX;

// ---- RunPlan on synthetic indexes ----------------------------------------------------

struct FileSpec {
  std::string name;
  std::vector<uint64_t> blocks;  // content as block ids; equal ids = equal blocks
  uint64_t phys = 0;             // physical address of the single extent
  uint64_t size = 0;             // 0: blocks * kBs
  uint32_t fs = 0;
  uint32_t flags = 0;            // flags of the extent
  int64_t mtime = 1;
  uint64_t ino = 0;              // 0: assigned
  std::vector<FiemapExtent> extents;  // overrides phys when set
  std::string error;
};

FileEntry MakeEntry(const FileSpec& s, uint64_t ino) {
  FileEntry e;
  e.path = "/r/" + s.name;
  e.fs = s.fs;
  e.dev = 100 + s.fs;
  e.ino = s.ino ? s.ino : ino;
  e.size = s.size ? s.size : s.blocks.size() * kBs;
  e.mtime_ns = s.mtime;
  e.ctime_ns = s.mtime;
  e.nlink = 1;
  if (!s.extents.empty()) {
    e.extents = s.extents;
  } else {
    e.extents.push_back({0, s.phys, (e.size + 4095) / 4096 * 4096, s.flags | kExtentLast});
  }
  if (!s.error.empty()) {
    e.error = s.error;
    e.errnum = 5;
    return e;
  }
  e.hashed = true;
  std::vector<uint64_t> content = s.blocks;
  content.push_back(e.size);
  e.hash = HashBytes(content.data(), content.size() * 8);
  for (uint64_t b : s.blocks) e.block_hashes.push_back({b, b * 31 + 7});
  return e;
}

// A filesystem record. Block runs that leave part of an extent referenced are planned
// on XFS, which frees block by block, and not on btrfs (frees.h).
FsRecord Fs(const std::string& uuid, uint64_t subvolume, const std::string& type = "btrfs") {
  FsRecord f;
  f.uuid = uuid;
  f.subvolume = subvolume;
  f.dev = 100 + subvolume;
  f.type = type;
  f.block_size = 4096;
  f.mount_point = "/r";
  return f;
}

void WriteSpecIndex(const std::string& path, const std::vector<FileSpec>& specs,
                    std::vector<FsRecord> filesystems = {Fs("U", 5)}, uint32_t block_size = kBs) {
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = std::move(filesystems);
  h.block_size = block_size;
  std::vector<FileEntry> files;
  for (size_t i = 0; i < specs.size(); ++i) files.push_back(MakeEntry(specs[i], 1000 + i));
  test::WriteIndex(path, h, files, 7);
}

struct PlanRun {
  Status status;
  PlanStats stats;
  PlanHeader header;
  std::vector<PlanRound> rounds;
  std::vector<GroupReport> groups;
  std::vector<PlanOp> ops;           // all ops in plan order
  std::vector<const PlanRound*> op_round;
  // Path of a file index of the round an op came from.
  std::string Path(size_t op, uint32_t file) const { return op_round[op]->files[file].path; }
};

PlanRun Plan(const TempDir& dir, PlanOptions o) {
  PlanRun r;
  const std::string out_path = dir.Join("out.plan");
  auto out = OutputFile::Open(out_path);
  EXPECT_TRUE(out.ok());
  r.status = RunPlan(o, out->get(), nullptr, &r.stats, &r.groups);
  if (!r.status.ok()) return r;
  EXPECT_OK((*out)->Commit());
  r.rounds = test::ReadAllRounds(out_path, &r.header);
  for (const auto& round : r.rounds)
    for (const auto& op : round.ops) {
      r.ops.push_back(op);
      r.op_round.push_back(&round);
    }
  return r;
}

PlanOptions Opts(const std::vector<std::string>& indexes) {
  PlanOptions o;
  o.indexes = indexes;
  return o;
}

std::vector<uint64_t> Blocks(uint64_t first, size_t n) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

// Checks invariants every plan must hold.
void CheckPlanInvariants(const PlanRun& r, uint64_t round_size) {
  uint64_t planned = 0;
  for (const auto& round : r.rounds) {
    uint64_t bytes = 0;
    for (const auto& op : round.ops) {
      bytes += op.length * (1 + op.dests.size());
      planned += op.length * op.dests.size();
      EXPECT_LE(op.dests.size(), kMaxDedupeDests);
      const auto& src = round.files[op.source];
      EXPECT_EQ(op.offset % 4096, 0u);
      EXPECT_TRUE(op.length % 4096 == 0 || op.offset + op.length == src.size)
          << "unaligned length " << op.length << " at " << op.offset << " of " << src.size;
      EXPECT_LE(op.offset + op.length, src.size);
      for (const auto& d : op.dests) {
        EXPECT_NE(round.files[d.file].path, src.path) << "a file deduped against itself in one op";
        EXPECT_EQ(d.offset % 4096, 0u);
        EXPECT_LE(d.offset + op.length, round.files[d.file].size);
        EXPECT_TRUE(op.length % 4096 == 0 || d.offset + op.length == round.files[d.file].size);
      }
    }
    EXPECT_EQ(round.bytes, bytes);
    EXPECT_LE(round.bytes, round_size);
  }
  EXPECT_EQ(planned, r.stats.planned_bytes);
  EXPECT_EQ(r.header.planned_bytes, r.stats.planned_bytes);
  EXPECT_EQ(r.header.rounds, r.rounds.size());
  EXPECT_EQ(r.stats.ops, r.ops.size());
  // A round's ops run in order of their source's physical address, and the rounds in the
  // order of their first op's (later ones are taken into a round beside their neighbours
  // on the disk, packing.h).
  uint64_t first = 0;
  for (const auto& round : r.rounds) {
    if (round.ops.empty()) continue;
    EXPECT_LE(first, round.ops[0].physical) << "round " << round.index;
    first = round.ops[0].physical;
    for (size_t i = 1; i < round.ops.size(); ++i)
      EXPECT_LE(round.ops[i - 1].physical, round.ops[i].physical) << "round " << round.index << " op " << i;
  }
}

TEST(Planner, WholeFileGroupOfThree) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"x", Blocks(1, 8), 30 << 20},
                                     {"y", Blocks(1, 8), 10 << 20},
                                     {"z", Blocks(1, 8), 20 << 20},
                                     {"other", Blocks(100, 8), 40 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  EXPECT_EQ(r.stats.files, 4u);
  EXPECT_EQ(r.stats.whole_groups, 1u);
  EXPECT_EQ(r.stats.block_groups, 0u);
  EXPECT_EQ(r.stats.duplicate_bytes, 2u << 20);
  EXPECT_EQ(r.stats.shared_bytes, 0u);
  EXPECT_EQ(r.stats.planned_bytes, 2u << 20);
  ASSERT_EQ(r.ops.size(), 1u);
  const PlanOp& op = r.ops[0];
  EXPECT_EQ(r.Path(0, op.source), "/r/y");  // the earliest on disk
  EXPECT_EQ(op.offset, 0u);
  EXPECT_EQ(op.length, 1u << 20);
  EXPECT_EQ(op.physical, 10u << 20);
  ASSERT_EQ(op.dests.size(), 2u);
  std::map<std::string, PlanDest> dests;
  for (const auto& d : op.dests) dests[r.Path(0, d.file)] = d;
  ASSERT_TRUE(dests.count("/r/x") && dests.count("/r/z"));
  EXPECT_EQ(dests["/r/x"].offset, 0u);
  EXPECT_EQ(dests["/r/x"].physical, 30u << 20);
  EXPECT_EQ(dests["/r/z"].physical, 20u << 20);
  // The round names the files as the index did.
  ASSERT_EQ(r.rounds.size(), 1u);
  for (const auto& f : r.rounds[0].files) {
    EXPECT_EQ(f.size, 1u << 20);
    EXPECT_EQ(f.mtime_ns, 1);
    EXPECT_EQ(f.dev, 100u);
    EXPECT_GE(f.ino, 1000u);
  }
  EXPECT_EQ(r.header.roots, std::vector<std::string>{"/r"});
  EXPECT_EQ(r.header.indexes, std::vector<std::string>{dir.Join("a.idx")});
  EXPECT_EQ(r.header.groups, 1u);
  ASSERT_EQ(r.header.filesystems.size(), 1u);
  EXPECT_EQ(r.header.filesystems[0].uuid, "U");
  // The group report.
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].size, 1u << 20);
  EXPECT_EQ(r.groups[0].source, "/r/y");
  EXPECT_EQ(std::set<std::string>(r.groups[0].dests.begin(), r.groups[0].dests.end()),
            (std::set<std::string>{"/r/x", "/r/z"}));
  EXPECT_EQ(r.groups[0].dest_shared, (std::vector<bool>{false, false}));
}

TEST(Planner, DestAlreadySharingIsLeftOut) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"a", Blocks(1, 8), 10 << 20},
                                     {"b", Blocks(1, 8), 10 << 20},  // same extents as a
                                     {"c", Blocks(1, 8), 5 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  ASSERT_EQ(r.ops.size(), 1u);
  // The source comes from the set already sharing (a, b), not the lone c.
  EXPECT_EQ(r.Path(0, r.ops[0].source), "/r/a");
  ASSERT_EQ(r.ops[0].dests.size(), 1u);
  EXPECT_EQ(r.Path(0, r.ops[0].dests[0].file), "/r/c");
  EXPECT_EQ(r.stats.duplicate_bytes, 2u << 20);
  EXPECT_EQ(r.stats.shared_bytes, 1u << 20);
  EXPECT_EQ(r.stats.planned_bytes, 1u << 20);
  EXPECT_EQ(r.header.shared_bytes, 1u << 20);
  ASSERT_EQ(r.groups.size(), 1u);
  for (size_t i = 0; i < r.groups[0].dests.size(); ++i)
    EXPECT_EQ(r.groups[0].dest_shared[i], r.groups[0].dests[i] == "/r/b") << r.groups[0].dests[i];
}

TEST(Planner, AllSharingPlansNothing) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"a", Blocks(1, 4), 10 << 20}, {"b", Blocks(1, 4), 10 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.stats.whole_groups, 1u);
  EXPECT_EQ(r.stats.shared_bytes, 512u << 10);
  EXPECT_EQ(r.stats.planned_bytes, 0u);
}

TEST(Planner, PartlySharingDestGetsTheRest) {
  TempDir dir;
  FileSpec a{"a", Blocks(1, 8)}, b{"b", Blocks(1, 8)};
  a.extents = {{0, 10 << 20, 512 << 10, 0}, {512 << 10, 50 << 20, 512 << 10, kExtentLast}};
  b.extents = {{0, 10 << 20, 512 << 10, 0}, {512 << 10, 70 << 20, 512 << 10, kExtentLast}};
  WriteSpecIndex(dir.Join("a.idx"), {a, b});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].offset, 512u << 10);
  EXPECT_EQ(r.ops[0].length, 512u << 10);
  EXPECT_EQ(r.ops[0].physical, 50u << 20);
  EXPECT_EQ(r.ops[0].dests[0].offset, 512u << 10);
  EXPECT_EQ(r.ops[0].dests[0].physical, 70u << 20);
  EXPECT_EQ(r.stats.shared_bytes, 512u << 10);
  EXPECT_EQ(r.stats.planned_bytes, 512u << 10);
}

TEST(Planner, HolesInTheSourceAreNotPlanned) {
  TempDir dir;
  FileSpec a{"a", Blocks(1, 8)}, b{"b", Blocks(1, 8), 20 << 20};
  a.extents = {{0, 10 << 20, 256 << 10, 0}, {512 << 10, (10 << 20) + (512 << 10), 512 << 10, kExtentLast}};
  WriteSpecIndex(dir.Join("a.idx"), {a, b});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.Path(0, r.ops[0].source), "/r/a");
  std::vector<Range> got;
  for (const auto& op : r.ops) got.push_back({op.offset, op.length});
  std::sort(got.begin(), got.end(), [](const Range& x, const Range& y) { return x.offset < y.offset; });
  EXPECT_EQ(got, (std::vector<Range>{{0, 256 << 10}, {512 << 10, 512 << 10}}));
  EXPECT_EQ(r.stats.planned_bytes, 768u << 10);
}

TEST(Planner, DifferentFilesystemsNeverPaired) {
  TempDir dir;
  // Two indexes of two filesystems, the same content on both.
  WriteSpecIndex(dir.Join("a.idx"), {{"a1", Blocks(1, 8), 10 << 20}}, {Fs("UUID-A", 5)});
  WriteSpecIndex(dir.Join("b.idx"), {{"b1", Blocks(1, 8), 10 << 20}}, {Fs("UUID-B", 5)});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx"), dir.Join("b.idx")}));
  ASSERT_OK(r.status);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.stats.whole_groups, 0u);
  EXPECT_EQ(r.stats.block_groups, 0u);
  EXPECT_EQ(r.stats.filesystems, 2u);
  EXPECT_EQ(r.stats.files, 2u);
  // The same inode number on two filesystems is two files, not a duplicate inode.
  EXPECT_EQ(r.stats.duplicate_inodes, 0u);

  // One index naming two filesystems.
  WriteSpecIndex(dir.Join("c.idx"),
                 {{"c1", Blocks(1, 8), 10 << 20, 0, 0}, {"c2", Blocks(1, 8), 20 << 20, 0, 1},
                  {"c3", {300, 301, 1, 2}, 30 << 20, 0, 0}},  // shares blocks 1, 2 with c1 (same fs)
                 {Fs("UUID-A", 5, "xfs"), Fs("UUID-B", 5, "xfs")});
  r = Plan(dir, Opts({dir.Join("c.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.filesystems, 2u);
  EXPECT_EQ(r.stats.whole_groups, 0u);
  // Only the block run between c1 and c3 (same filesystem); c2's equal blocks are not used.
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.Path(0, r.ops[0].source), "/r/c1");
  ASSERT_EQ(r.ops[0].dests.size(), 1u);
  EXPECT_EQ(r.Path(0, r.ops[0].dests[0].file), "/r/c3");
  EXPECT_EQ(r.ops[0].length, 2u * kBs);
}

TEST(Planner, SameOwnerPairsOnlyFilesOfOneOwner) {
  TempDir dir;
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = {Fs("U", 5, "xfs")};
  h.block_size = kBs;
  // a1, a2 of owner 1 and b1 of owner 2 are equal; b2 (owner 2) shares half of b1's blocks.
  std::vector<FileEntry> files{MakeEntry({"a1", Blocks(1, 8), 10 << 20}, 1000),
                               MakeEntry({"b1", Blocks(1, 8), 20 << 20}, 1001),
                               MakeEntry({"a2", Blocks(1, 8), 30 << 20}, 1002),
                               MakeEntry({"b2", {1, 2, 3, 4, 90, 91, 92, 93}, 40 << 20}, 1003)};
  files[0].uid = files[2].uid = 1001;
  files[1].uid = files[3].uid = 1002;
  test::WriteIndex(dir.Join("i.idx"), h, files, 7);
  std::map<std::string, uint32_t> owner{{"/r/a1", 1}, {"/r/a2", 1}, {"/r/b1", 2}, {"/r/b2", 2}};
  PlanRun any = Plan(dir, Opts({dir.Join("i.idx")}));
  ASSERT_OK(any.status);
  bool crossed = false;
  for (size_t i = 0; i < any.ops.size(); ++i)
    for (const auto& d : any.ops[i].dests)
      crossed |= owner[any.Path(i, any.ops[i].source)] != owner[any.Path(i, d.file)];
  EXPECT_TRUE(crossed) << "without --same-owner the owners' files pair";
  PlanOptions o = Opts({dir.Join("i.idx")});
  o.same_owner = true;
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.whole_groups, 1u);
  ASSERT_FALSE(r.ops.empty());
  bool b_paired = false;
  for (size_t i = 0; i < r.ops.size(); ++i)
    for (const auto& d : r.ops[i].dests) {
      EXPECT_EQ(owner[r.Path(i, r.ops[i].source)], owner[r.Path(i, d.file)]) << r.Path(i, d.file);
      b_paired |= owner[r.Path(i, d.file)] == 2;
    }
  EXPECT_TRUE(b_paired) << "b1 and b2 share blocks and one owner";
  // An index that records no owners cannot be planned so.
  h.owners = false;
  test::WriteIndex(dir.Join("old.idx"), h, files, 7);
  o.indexes = {dir.Join("old.idx")};
  EXPECT_NE(Plan(dir, o).status.message().find("records no file owners"), std::string::npos);
}

TEST(Planner, SubvolumesOfOneFilesystemPaired) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"s5", Blocks(1, 8), 10 << 20, 0, 0}, {"s256", Blocks(1, 8), 20 << 20, 0, 1}},
                 {Fs("U", 5), Fs("U", 256)});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.stats.filesystems, 1u);
  ASSERT_EQ(r.header.filesystems.size(), 2u);
  const PlanRound& round = r.rounds[0];
  EXPECT_NE(round.files[r.ops[0].source].fs, round.files[r.ops[0].dests[0].file].fs);
  EXPECT_EQ(r.header.filesystems[round.files[r.ops[0].source].fs].subvolume, 5u);
}

TEST(Planner, RoundsRespectRoundSize) {
  TempDir dir;
  std::vector<FileSpec> specs;
  // Ten pairs of 256 KiB files, sources placed on disk in an order unlike their names.
  for (int g = 0; g < 10; ++g) {
    uint64_t phys = uint64_t((g * 7) % 10 + 1) << 24;
    specs.push_back({"g" + std::to_string(g) + "a", Blocks(1000 * (g + 1), 2), phys});
    specs.push_back({"g" + std::to_string(g) + "b", Blocks(1000 * (g + 1), 2), phys + (1u << 30)});
  }
  // And three copies of a 4 MiB file, more than one round holds.
  for (int c = 0; c < 3; ++c) specs.push_back({"big" + std::to_string(c), Blocks(50000, 32), uint64_t(c + 20) << 26});
  WriteSpecIndex(dir.Join("a.idx"), specs);
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.round_size = 1 << 20;
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 1 << 20);
  EXPECT_EQ(r.stats.whole_groups, 11u);
  EXPECT_EQ(r.stats.planned_bytes, 10u * (256 << 10) + 2u * (4 << 20));
  EXPECT_GE(r.rounds.size(), 5u + 12u);
  // The big file is cut into ops that cover it exactly once per destination.
  std::map<std::string, uint64_t> covered;
  for (size_t i = 0; i < r.ops.size(); ++i)
    for (const auto& d : r.ops[i].dests) covered[r.Path(i, d.file)] += r.ops[i].length;
  uint64_t big_dest_bytes = 0;
  for (const auto& [p, n] : covered)
    if (p.find("/r/big") == 0) {
      EXPECT_EQ(n, 4u << 20) << p;
      big_dest_bytes += n;
    }
  EXPECT_EQ(big_dest_bytes, 8u << 20);
  EXPECT_EQ(r.stats.rounds, r.rounds.size());
  // Round indices count up from 0.
  for (size_t i = 0; i < r.rounds.size(); ++i) EXPECT_EQ(r.rounds[i].index, i);
}

TEST(Planner, RoundSizeTooSmallRejected) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {});
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.round_size = 1000;
  EXPECT_TRUE(StatusIs(Plan(dir, o).status, Status::Code::kInvalidArgument, "round-size"));
}

// Rounds are 32M by default, 48M when an index says its roots spin (fewer long seeks
// between a round's sources and destinations), and what --round-size says when given.
TEST(Planner, RoundSizeFromTheStorageUnlessGiven) {
  TempDir dir;
  std::vector<FileSpec> specs;
  // Twenty pairs of equal 4 MiB files (32 blocks each): 160 MiB to read.
  for (int i = 0; i < 40; ++i) {
    std::vector<uint64_t> blocks;
    for (uint64_t j = 0; j < 32; ++j) blocks.push_back(uint64_t(100 + i % 20) * 1000 + j);
    specs.push_back({"f" + std::to_string(i), blocks, uint64_t(i + 1) << 24});
  }
  WriteSpecIndex(dir.Join("ssd.idx"), specs);
  {
    IndexHeader h;
    h.roots = {"/r"};
    h.filesystems = {Fs("U", 5)};
    h.block_size = kBs;
    h.spinning = true;
    std::vector<FileEntry> files;
    for (size_t i = 0; i < specs.size(); ++i) files.push_back(MakeEntry(specs[i], 1000 + i));
    test::WriteIndex(dir.Join("hdd.idx"), h, files, 7);
  }
  PlanRun ssd = Plan(dir, Opts({dir.Join("ssd.idx")}));
  ASSERT_OK(ssd.status);
  EXPECT_EQ(ssd.header.round_size, kRoundSize);
  CheckPlanInvariants(ssd, kRoundSize);
  PlanRun hdd = Plan(dir, Opts({dir.Join("hdd.idx")}));
  ASSERT_OK(hdd.status);
  EXPECT_EQ(hdd.header.round_size, kSpinningRoundSize);
  CheckPlanInvariants(hdd, kSpinningRoundSize);
  EXPECT_LT(hdd.rounds.size(), ssd.rounds.size());
  uint64_t largest = 0;
  for (const auto& r : hdd.rounds) largest = std::max(largest, r.bytes);
  EXPECT_GT(largest, kRoundSize);
  PlanOptions o = Opts({dir.Join("hdd.idx")});
  o.round_size = 8 << 20;
  PlanRun given = Plan(dir, o);
  ASSERT_OK(given.status);
  EXPECT_EQ(given.header.round_size, 8u << 20);
  CheckPlanInvariants(given, 8 << 20);
}

TEST(Planner, MoreThan127DestsSplit) {
  TempDir dir;
  std::vector<FileSpec> specs;
  for (int i = 0; i < 200; ++i) {
    FileSpec s{"f" + std::to_string(i), {77}, uint64_t(i + 1) << 20};
    s.size = 8192;
    specs.push_back(s);
  }
  WriteSpecIndex(dir.Join("a.idx"), specs);
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  ASSERT_EQ(r.ops.size(), 2u);
  std::set<std::string> dests;
  std::set<std::string> sources;
  size_t total = 0;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    sources.insert(r.Path(i, r.ops[i].source));
    EXPECT_EQ(r.ops[i].length, 8192u);
    for (const auto& d : r.ops[i].dests) dests.insert(r.Path(i, d.file));
    total += r.ops[i].dests.size();
  }
  EXPECT_EQ(std::max(r.ops[0].dests.size(), r.ops[1].dests.size()), kMaxDedupeDests);
  EXPECT_EQ(total, 199u);
  EXPECT_EQ(dests.size(), 199u);  // each destination once
  EXPECT_EQ(sources, std::set<std::string>{"/r/f0"});
  EXPECT_FALSE(dests.count("/r/f0"));
}

TEST(Planner, BlockRunInTheMiddle) {
  TempDir dir;
  // x: 11 12 13 14 15; y: 21 22 12 13 14 26. Blocks 12-14 are shared in a run.
  WriteSpecIndex(dir.Join("a.idx"), {{"x", {11, 12, 13, 14, 15}, 10 << 20}, {"y", {21, 22, 12, 13, 14, 26}, 20 << 20}},
                 {Fs("U", 5, "xfs")});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  EXPECT_EQ(r.stats.whole_groups, 0u);
  EXPECT_EQ(r.stats.block_groups, 3u);
  ASSERT_EQ(r.ops.size(), 1u);
  const PlanOp& op = r.ops[0];
  EXPECT_EQ(r.Path(0, op.source), "/r/x");
  EXPECT_EQ(op.offset, 1u * kBs);
  EXPECT_EQ(op.length, 3u * kBs);
  EXPECT_EQ(op.physical, (10u << 20) + kBs);
  ASSERT_EQ(op.dests.size(), 1u);
  EXPECT_EQ(r.Path(0, op.dests[0].file), "/r/y");
  EXPECT_EQ(op.dests[0].offset, 2u * kBs);
  EXPECT_EQ(op.dests[0].physical, (20u << 20) + 2 * kBs);
  EXPECT_EQ(r.stats.planned_bytes, 3u * kBs);
  EXPECT_EQ(r.stats.duplicate_bytes, 3u * kBs);
}

TEST(Planner, OnBtrfsABlockRunInsideExtentsIsLeftAlone) {
  TempDir dir;
  // As above, each file one extent: sharing the run would free neither.
  WriteSpecIndex(dir.Join("a.idx"), {{"x", {11, 12, 13, 14, 15}, 10 << 20}, {"y", {21, 22, 12, 13, 14, 26}, 20 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.stats.duplicate_bytes, 3u * kBs);
  EXPECT_EQ(r.stats.partial_left_bytes, 3u * kBs);
  EXPECT_EQ(r.stats.planned_bytes, 0u);
}

TEST(Planner, OnBtrfsAnExtentSharedButForOneBlockGoesFreeByRewritingIt) {
  TempDir dir;
  // y is x with its last of 20 blocks changed, each written in one go: sharing 19 blocks
  // frees y's extent only once its 20th block is copied into a new extent.
  std::vector<uint64_t> y = Blocks(100, 19);
  y.push_back(999);
  WriteSpecIndex(dir.Join("a.idx"), {{"x", Blocks(100, 20), 10 << 20}, {"y", y, 20 << 20}});
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.max_rewrite = 4;  // 1 block of 20 is 5 %: not allowed
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.header.format_version, kPlanFormatNoRewrite);
  r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.planned_bytes, 19u * kBs);
  EXPECT_EQ(r.stats.rewrite_bytes, kBs);
  EXPECT_EQ(r.header.rewrite_bytes, kBs);
  EXPECT_EQ(r.header.format_version, kPlanFormatVersion);
  uint64_t rewrites = 0;
  for (size_t i = 0; i < r.ops.size(); ++i)
    for (const auto& d : r.ops[i].dests)
      if (IsRewrite(r.ops[i], d)) {
        EXPECT_EQ(r.Path(i, d.file), "/r/y");
        EXPECT_EQ(d.offset, 19u * kBs);
        rewrites += r.ops[i].length;
      }
  EXPECT_EQ(rewrites, kBs);
}

TEST(Planner, AWholeFileTwinIsNeverAPartialDestination) {
  TempDir dir;
  // t1 and t2 are equal and share one extent already (a whole-file group, deduped the
  // night before); z holds all of t's blocks and one more. Sharing z's blocks into t1
  // would free nothing: its twin keeps the extent.
  std::vector<uint64_t> z = Blocks(100, 19);
  z.push_back(999);
  WriteSpecIndex(dir.Join("a.idx"), {{"t1", Blocks(100, 19), 10 << 20}, {"t2", Blocks(100, 19), 10 << 20}, {"z", z, 30 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.whole_groups, 1u);
  for (size_t i = 0; i < r.ops.size(); ++i)
    for (const auto& d : r.ops[i].dests)
      if (r.Path(i, r.ops[i].source) == "/r/z" && !IsRewrite(r.ops[i], d))
        ADD_FAILURE() << "z shared into " << r.Path(i, d.file);
}

TEST(Planner, BlockRunsOffWhenDisabled) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"x", {11, 12, 13, 14, 15}, 10 << 20}, {"y", {21, 22, 12, 13, 14, 26}, 20 << 20},
                                     {"w1", Blocks(500, 2), 30 << 20}, {"w2", Blocks(500, 2), 40 << 20}},
                 {Fs("U", 5, "xfs")});
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.blocks = false;
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  ASSERT_EQ(r.ops.size(), 1u);  // only the whole-file pair
  EXPECT_EQ(r.ops[0].length, 2u * kBs);
  o.blocks = true;
  o.whole_files = false;
  r = Plan(dir, o);
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.whole_groups, 0u);
  // w1/w2 now pair as a run of two blocks, x/y as a run of three.
  std::multiset<uint64_t> lengths;
  for (const auto& op : r.ops) lengths.insert(op.length);
  EXPECT_EQ(lengths, (std::multiset<uint64_t>{2 * kBs, 3 * kBs}));
}

TEST(Planner, InlineAndUnreadableFilesSkipped) {
  TempDir dir;
  FileSpec inl{"inl", {5}, 0, 3000};
  inl.flags = kExtentInline;
  FileSpec reg{"reg", {5}, 10 << 20, 3000};
  FileSpec bad{"bad", {9}, 20 << 20, 3000};
  FileSpec bad2{"bad2", {9}, 30 << 20, 3000};
  bad2.error = "open: Permission denied";
  WriteSpecIndex(dir.Join("a.idx"), {inl, reg, bad, bad2});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.skipped_inline, 1u);
  EXPECT_EQ(r.stats.skipped_errors, 1u);
  EXPECT_EQ(r.stats.files, 2u);
  EXPECT_TRUE(r.ops.empty());
  // Control: without the inline flag the pair is planned.
  inl.flags = 0;
  inl.phys = 40 << 20;
  WriteSpecIndex(dir.Join("b.idx"), {inl, reg});
  r = Plan(dir, Opts({dir.Join("b.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].length, 3000u);  // ends at EOF: not rounded up
}

TEST(Planner, SinceLimitsToChangedGroups) {
  TempDir dir;
  std::vector<FileSpec> old_specs = {{"a", Blocks(1, 2), 10 << 20}, {"b", Blocks(1, 2), 20 << 20},
                                     {"c", Blocks(9, 2), 30 << 20}, {"d", Blocks(9, 2), 40 << 20}};
  for (size_t i = 0; i < old_specs.size(); ++i) old_specs[i].ino = 1000 + i;
  std::vector<FileSpec> new_specs = old_specs;
  new_specs[3].mtime = 2;  // d changed since the old scan
  WriteSpecIndex(dir.Join("old.idx"), old_specs);
  WriteSpecIndex(dir.Join("new.idx"), new_specs);

  PlanRun all = Plan(dir, Opts({dir.Join("new.idx")}));
  ASSERT_OK(all.status);
  EXPECT_EQ(all.stats.whole_groups, 2u);
  EXPECT_EQ(all.ops.size(), 2u);

  PlanOptions o = Opts({dir.Join("new.idx")});
  o.since = dir.Join("old.idx");
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.whole_groups, 1u);
  ASSERT_EQ(r.ops.size(), 1u);
  std::set<std::string> names = {r.Path(0, r.ops[0].source), r.Path(0, r.ops[0].dests[0].file)};
  EXPECT_EQ(names, (std::set<std::string>{"/r/c", "/r/d"}));
  EXPECT_FALSE(r.stats.since_truncated);

  // A new file counts as changed too.
  new_specs.push_back({"e", Blocks(1, 2), 50 << 20});
  WriteSpecIndex(dir.Join("new2.idx"), new_specs);
  o.indexes = {dir.Join("new2.idx")};
  r = Plan(dir, o);
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.whole_groups, 2u);

  // A damaged --since index is an error naming the option.
  test::WriteFile(dir.Join("junk"), "junk");
  o.since = dir.Join("junk");
  EXPECT_TRUE(StatusIs(Plan(dir, o).status, Status::Code::kCorrupt, "--since"));
}

TEST(Planner, LengthsBlockAlignedUnlessEof) {
  TempDir dir;
  const uint64_t size = (1 << 20) + 1000;
  std::vector<FileSpec> specs;
  for (int i = 0; i < 3; ++i) {
    FileSpec s{"f" + std::to_string(i), Blocks(1, 9), uint64_t(i + 1) << 24};
    s.size = size;
    specs.push_back(s);
  }
  WriteSpecIndex(dir.Join("a.idx"), specs);
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.round_size = 1 << 20;
  PlanRun r = Plan(dir, o);
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 1 << 20);
  ASSERT_GE(r.ops.size(), 4u);
  uint64_t covered = 0;
  int unaligned = 0;
  for (const auto& op : r.ops) {
    covered += op.length;
    if (op.length % 4096) {
      ++unaligned;
      EXPECT_EQ(op.offset + op.length, size);
    }
  }
  EXPECT_EQ(covered, size);
  EXPECT_EQ(unaligned, 1);
}

TEST(Planner, SameIndexTwiceCountsDuplicateInodes) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"a", Blocks(1, 2), 10 << 20}, {"b", Blocks(1, 2), 20 << 20}});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx"), dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  EXPECT_EQ(r.stats.duplicate_inodes, 2u);
  EXPECT_EQ(r.stats.files, 2u);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].dests.size(), 1u);
  EXPECT_EQ(r.header.indexes.size(), 1u);
}

// One index holding an inode twice (the same path again, as a scan of overlapping
// roots wrote it, or another path of it, as a crafted or merged index may): it is one
// file. No destination is named twice, the plan and every figure are those of the
// index holding each inode once.
TEST(Planner, OneIndexWithAnInodeTwiceCountsItOnce) {
  TempDir dir;
  const std::vector<FileSpec> once = {{"a", Blocks(1, 2), 10 << 20},
                                      {"b", Blocks(1, 2), 20 << 20},
                                      {"c", Blocks(10, 4), 30 << 20},
                                      {"d", {10, 11, 99, 98}, 40 << 20}};
  std::vector<FileSpec> twice = once;
  for (size_t i = 0; i < once.size(); ++i) {
    twice[i].ino = 1000 + i;
    FileSpec again = twice[i];
    if (i % 2) again.name += "-other-path";
    twice.push_back(again);
  }
  const std::vector<FsRecord> xfs = {Fs("U", 0, "xfs")};  // block runs planned, extents or not
  WriteSpecIndex(dir.Join("once.idx"), once, xfs);
  WriteSpecIndex(dir.Join("twice.idx"), twice, xfs);
  PlanRun a = Plan(dir, Opts({dir.Join("once.idx")}));
  PlanRun b = Plan(dir, Opts({dir.Join("twice.idx")}));
  ASSERT_OK(a.status);
  ASSERT_OK(b.status);
  EXPECT_EQ(b.stats.duplicate_inodes, once.size());
  EXPECT_EQ(b.stats.files, a.stats.files);
  EXPECT_EQ(b.stats.whole_groups, 1u);
  EXPECT_EQ(b.stats.duplicate_bytes, a.stats.duplicate_bytes);
  EXPECT_EQ(b.stats.planned_bytes, a.stats.planned_bytes);
  EXPECT_EQ(b.stats.partial_bytes, a.stats.partial_bytes);
  EXPECT_GT(a.stats.planned_bytes, 2 * kBs);  // the whole file and the block run
  CheckPlanInvariants(b, kRoundSize);
  ASSERT_EQ(b.ops.size(), a.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(b.Path(i, b.ops[i].source), a.Path(i, a.ops[i].source));
    ASSERT_EQ(b.ops[i].dests.size(), a.ops[i].dests.size());
    for (size_t d = 0; d < a.ops[i].dests.size(); ++d)
      EXPECT_EQ(b.Path(i, b.ops[i].dests[d].file), a.Path(i, a.ops[i].dests[d].file));
  }
  ASSERT_EQ(b.groups.size(), 1u);
  EXPECT_EQ(b.groups[0].dests.size(), 1u);
}

TEST(Planner, IndexesWithDifferentBlockSizesRejected) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"a", Blocks(1, 2), 10 << 20}});
  WriteSpecIndex(dir.Join("b.idx"), {}, {Fs("U", 5)}, 64 * 1024);
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx"), dir.Join("b.idx")}));
  EXPECT_TRUE(StatusIs(r.status, Status::Code::kInvalidArgument, "block-size"));
}

TEST(Planner, DamagedOrTruncatedIndexRejected) {
  TempDir dir;
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = {Fs("U", 5)};
  test::WriteIndex(dir.Join("cut.idx"), h, {MakeEntry({"a", Blocks(1, 2), 10 << 20}, 1)}, 7, /*finish=*/false);
  EXPECT_TRUE(StatusIs(Plan(dir, Opts({dir.Join("cut.idx")})).status, Status::Code::kCorrupt, "truncated"));
  EXPECT_FALSE(test::Exists(dir.Join("out.plan")));
}

// Planning with a memory budget small enough that every sorter and the file store spill
// to temporary files gives exactly the plan planned in memory.
TEST(Planner, SpillingToDiskGivesTheSamePlan) {
  TempDir dir;
  std::vector<FileSpec> specs;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    // Whole-file groups of 1-4 copies, some large enough to span rounds, block runs
    // shared between otherwise different files, and a group of 200 copies.
    const int group = i / 3;
    std::vector<uint64_t> blocks = Blocks(uint64_t(group) * 100, 1 + group % 5);
    if (i % 11 == 0) blocks.push_back(900000 + i);  // differs at the end: a block run, not a whole file
    if (i % 3 == 2 && group % 4 == 0) blocks = Blocks(uint64_t(group) * 100 + 50, 3);  // a singleton
    specs.push_back({"d" + std::to_string(i % 17) + "/f" + std::to_string(i), blocks, (rng() % 100000 + 1) << 20});
  }
  for (int c = 0; c < 200; ++c) specs.push_back({"many/" + std::to_string(c), {424242}, uint64_t(c + 200000) << 20});
  WriteSpecIndex(dir.Join("a.idx"), specs);
  // A second index that sees two of the same inodes again, and one file of its own.
  std::vector<FileSpec> b = {specs[5], specs[6], {"extra", Blocks(500, 3), 7ull << 40}};
  b[0].ino = 1005;
  b[1].ino = 1006;
  b[2].ino = 999999;
  WriteSpecIndex(dir.Join("b.idx"), b);

  PlanOptions o = Opts({dir.Join("a.idx"), dir.Join("b.idx")});
  o.round_size = 1 << 20;
  PlanRun in_memory = Plan(dir, o);
  ASSERT_OK(in_memory.status);
  EXPECT_FALSE(in_memory.stats.spilled);
  CheckPlanInvariants(in_memory, o.round_size);
  o.memory = 64 << 10;
  o.temp_dir = dir.Join("spill");
  ASSERT_EQ(mkdir(o.temp_dir.c_str(), 0700), 0);
  PlanRun spilled = Plan(dir, o);
  ASSERT_OK(spilled.status);
  EXPECT_TRUE(spilled.stats.spilled);
  CheckPlanInvariants(spilled, o.round_size);
  EXPECT_EQ(test::ListDir(o.temp_dir).size(), 0u);  // nothing left behind

  EXPECT_GT(in_memory.stats.whole_groups, 500u);
  EXPECT_GT(in_memory.stats.block_groups, 100u);
  EXPECT_EQ(in_memory.stats.duplicate_inodes, 2u);
  EXPECT_GT(in_memory.rounds.size(), 20u);
  EXPECT_EQ(spilled.stats.files, in_memory.stats.files);
  EXPECT_EQ(spilled.stats.duplicate_inodes, in_memory.stats.duplicate_inodes);
  EXPECT_EQ(spilled.stats.whole_groups, in_memory.stats.whole_groups);
  EXPECT_EQ(spilled.stats.block_groups, in_memory.stats.block_groups);
  EXPECT_EQ(spilled.stats.duplicate_bytes, in_memory.stats.duplicate_bytes);
  EXPECT_EQ(spilled.stats.planned_bytes, in_memory.stats.planned_bytes);
  ASSERT_EQ(spilled.rounds.size(), in_memory.rounds.size());
  ASSERT_EQ(spilled.ops.size(), in_memory.ops.size());
  for (size_t i = 0; i < spilled.ops.size(); ++i) {
    const PlanOp &a = spilled.ops[i], &b = in_memory.ops[i];
    ASSERT_EQ(spilled.Path(i, a.source), in_memory.Path(i, b.source)) << "op " << i;
    ASSERT_EQ(a.offset, b.offset);
    ASSERT_EQ(a.length, b.length);
    ASSERT_EQ(a.physical, b.physical);
    ASSERT_EQ(a.dests.size(), b.dests.size());
    for (size_t k = 0; k < a.dests.size(); ++k) {
      ASSERT_EQ(spilled.Path(i, a.dests[k].file), in_memory.Path(i, b.dests[k].file));
      ASSERT_EQ(a.dests[k].offset, b.dests[k].offset);
    }
  }
}

TEST(Planner, UnwritableTempDirIsAClearError) {
  TempDir dir;
  std::vector<FileSpec> specs;
  for (int i = 0; i < 5000; ++i) specs.push_back({"f" + std::to_string(i), {uint64_t(i / 2)}, uint64_t(i + 1) << 20});
  WriteSpecIndex(dir.Join("a.idx"), specs);
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.memory = 64 << 10;
  o.temp_dir = dir.Join("missing");
  EXPECT_TRUE(StatusIs(Plan(dir, o).status, Status::Code::kIoError, "missing"));
}

// Blocks in preallocated (unwritten) extents read as zeros: never paired, even when
// their hashes match; written blocks of the same files still are.
TEST(Planner, UnwrittenBlocksNotPaired) {
  TempDir dir;
  FileSpec a{"a", {5, 0, 0, 6}, 0};
  a.extents = {{0, 10 << 20, kBs, 0}, {kBs, 11 << 20, 2 * kBs, kExtentUnwritten}, {3 * kBs, 12 << 20, kBs, kExtentLast}};
  FileSpec b{"b", {7, 0, 0, 6}, 0};
  b.extents = {{0, 20 << 20, kBs, 0}, {kBs, 21 << 20, 2 * kBs, kExtentUnwritten}, {3 * kBs, 22 << 20, kBs, kExtentLast}};
  WriteSpecIndex(dir.Join("a.idx"), {a, b});
  PlanRun r = Plan(dir, Opts({dir.Join("a.idx")}));
  ASSERT_OK(r.status);
  CheckPlanInvariants(r, 32 << 20);
  ASSERT_EQ(r.ops.size(), 1u);  // block 3 (hash 6) only
  EXPECT_EQ(r.ops[0].offset, 3u * kBs);
  EXPECT_EQ(r.ops[0].length, kBs);
  EXPECT_EQ(r.ops[0].dests[0].offset, 3u * kBs);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

TEST(Planner, StopsWhenAsked) {
  TempDir dir;
  WriteSpecIndex(dir.Join("a.idx"), {{"a", Blocks(1, 4), 10 << 20}, {"b", Blocks(1, 4), 20 << 20}});
  std::atomic<bool> stop{true};
  PlanOptions o = Opts({dir.Join("a.idx")});
  o.stop = &stop;
  PlanRun r = Plan(dir, o);
  EXPECT_TRUE(StatusIs(r.status, Status::Code::kInterrupted, "stopped"));
  stop = false;
  EXPECT_OK(Plan(dir, o).status);
}

// The same tree after a remount: btrfs gave it other device numbers. The same files.
TEST(Planner, AnotherDeviceNumberIsTheSameFile) {
  TempDir dir;
  std::vector<FileSpec> specs = {{"a", Blocks(1, 2), 10 << 20}, {"b", Blocks(1, 2), 20 << 20},
                                 {"c", Blocks(5, 3), 30 << 20}, {"d", Blocks(6, 3), 40 << 20}};
  WriteSpecIndex(dir.Join("before.idx"), specs);
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = {Fs("U", 5)};
  h.filesystems[0].dev = 777;
  h.block_size = kBs;
  std::vector<FileEntry> files;
  for (size_t i = 0; i < specs.size(); ++i) {
    files.push_back(MakeEntry(specs[i], 1000 + i));
    files.back().dev = 777;
  }
  test::WriteIndex(dir.Join("after.idx"), h, files, 7);

  PlanRun both = Plan(dir, Opts({dir.Join("before.idx"), dir.Join("after.idx")}));
  ASSERT_OK(both.status);
  EXPECT_EQ(both.stats.duplicate_inodes, specs.size());
  EXPECT_EQ(both.stats.files, specs.size());
  EXPECT_EQ(both.stats.whole_groups, 1u);
  PlanOptions o = Opts({dir.Join("after.idx")});
  o.since = dir.Join("before.idx");
  PlanRun since = Plan(dir, o);
  ASSERT_OK(since.status);
  EXPECT_EQ(since.stats.whole_groups, 0u);
  EXPECT_TRUE(since.ops.empty());
}

}  // namespace
}  // namespace oans
