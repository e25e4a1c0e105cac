#include "lib/format/plan_file.h"

#include <capnp/message.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include "format/plan.capnp.h"
#include "lib/format/frame_stream.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

PlanHeader SampleHeader() {
  PlanHeader h;
  h.tool_version = "0.1.0-test";
  h.created_ns = 42;
  h.roots = {"/data", "/\xFFodd"};
  FsRecord f;
  f.uuid = "uuid-1";
  f.subvolume = 256;
  f.dev = 77;
  f.type = "btrfs";
  f.block_size = 4096;
  f.mount_point = "/data";
  h.filesystems = {f, f};
  h.filesystems[1].subvolume = 257;
  h.round_size = 8 << 20;
  h.block_size = 128 * 1024;
  h.indexes = {"a.idx", "b.idx"};
  h.command_line = {"oans-plan", "a.idx", "b.idx"};
  h.rounds = 3;
  h.groups = 11;
  h.duplicate_bytes = 1000;
  h.shared_bytes = 100;
  h.planned_bytes = 900;
  return h;
}

PlanRound SampleRound(uint64_t index, int nfiles, int nops) {
  PlanRound r;
  r.index = index;
  for (int i = 0; i < nfiles; ++i)
    r.files.push_back({"/data/r" + std::to_string(index) + "/f" + std::to_string(i) + (i == 1 ? "\n\xFE" : ""),
                       uint32_t(i % 2), 77, 1000 + uint64_t(i), 1 << 20, 123456789 + i, uint32_t(1 + i % 3),
                       i % 3 ? std::vector<std::string>{"/data/other" + std::to_string(i)} : std::vector<std::string>{},
                       i % 4 == 2});
  for (int k = 0; k < nops; ++k) {
    PlanOp op;
    op.source = uint32_t(k % nfiles);
    op.offset = uint64_t(k) * 131072;
    op.length = 131072;
    op.physical = 5000000 + uint64_t(k) * 4096;
    for (int d = 0; d < 1 + k % 3; ++d)
      op.dests.push_back({uint32_t((k + d + 1) % nfiles), uint64_t(d) * 131072, 9000000 + uint64_t(d)});
    r.ops.push_back(op);
    r.bytes += op.length * (1 + op.dests.size());
  }
  return r;
}

void ExpectSameRound(const PlanRound& a, const PlanRound& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.bytes, b.bytes);
  ASSERT_EQ(a.files.size(), b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i) {
    EXPECT_EQ(a.files[i].path, b.files[i].path);
    EXPECT_EQ(a.files[i].nlink, b.files[i].nlink);
    EXPECT_EQ(a.files[i].other_paths, b.files[i].other_paths);
    EXPECT_EQ(a.files[i].unread, b.files[i].unread);
    EXPECT_EQ(a.files[i].fs, b.files[i].fs);
    EXPECT_EQ(a.files[i].dev, b.files[i].dev);
    EXPECT_EQ(a.files[i].ino, b.files[i].ino);
    EXPECT_EQ(a.files[i].size, b.files[i].size);
    EXPECT_EQ(a.files[i].mtime_ns, b.files[i].mtime_ns);
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const PlanOp &x = a.ops[i], &y = b.ops[i];
    EXPECT_EQ(x.source, y.source);
    EXPECT_EQ(x.offset, y.offset);
    EXPECT_EQ(x.length, y.length);
    EXPECT_EQ(x.physical, y.physical);
    ASSERT_EQ(x.dests.size(), y.dests.size());
    for (size_t j = 0; j < x.dests.size(); ++j) {
      EXPECT_EQ(x.dests[j].file, y.dests[j].file);
      EXPECT_EQ(x.dests[j].offset, y.dests[j].offset);
      EXPECT_EQ(x.dests[j].physical, y.dests[j].physical);
    }
  }
}

TEST(PlanFile, RoundTrip) {
  TempDir dir;
  const PlanHeader h = SampleHeader();
  std::vector<PlanRound> rounds = {SampleRound(0, 3, 5), SampleRound(1, 2, 1), SampleRound(2, 6, 20)};
  test::WritePlan(dir.Join("p"), h, rounds);

  auto reader = PlanReader::Open(dir.Join("p"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const PlanHeader& g = (*reader)->header();
  EXPECT_EQ((*reader)->name(), dir.Join("p"));
  EXPECT_EQ(g.format_version, kPlanFormatVersion);
  EXPECT_EQ(g.tool_version, h.tool_version);
  EXPECT_EQ(g.created_ns, h.created_ns);
  EXPECT_EQ(g.roots, h.roots);
  ASSERT_EQ(g.filesystems.size(), 2u);
  EXPECT_EQ(g.filesystems[1].uuid, "uuid-1");
  EXPECT_EQ(g.filesystems[1].subvolume, 257u);
  EXPECT_EQ(g.filesystems[1].dev, 77u);
  EXPECT_EQ(g.filesystems[1].type, "btrfs");
  EXPECT_EQ(g.filesystems[1].block_size, 4096u);
  EXPECT_EQ(g.filesystems[1].mount_point, "/data");
  EXPECT_EQ(g.round_size, h.round_size);
  EXPECT_EQ(g.block_size, h.block_size);
  EXPECT_EQ(g.indexes, h.indexes);
  EXPECT_EQ(g.command_line, h.command_line);
  EXPECT_EQ(g.rounds, 3u);
  EXPECT_EQ(g.groups, 11u);
  EXPECT_EQ(g.duplicate_bytes, 1000u);
  EXPECT_EQ(g.shared_bytes, 100u);
  EXPECT_EQ(g.planned_bytes, 900u);

  for (const auto& want : rounds) {
    PlanRound got;
    auto more = (*reader)->Next(&got);
    ASSERT_TRUE(more.ok()) << more.status().message();
    ASSERT_TRUE(*more);
    ExpectSameRound(got, want);
  }
  PlanRound extra;
  auto more = (*reader)->Next(&extra);
  ASSERT_TRUE(more.ok()) << more.status().message();
  EXPECT_FALSE(*more);
  more = (*reader)->Next(&extra);  // stays at the end
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

// The roots' storage is kept; a plan without it (older writers) reads as not recorded.
TEST(PlanFile, StorageIsRecordedOrNot) {
  TempDir dir;
  for (std::optional<StorageKind> kind : {std::optional<StorageKind>(StorageKind::kHdd),
                                          std::optional<StorageKind>(StorageKind::kSsd), std::optional<StorageKind>()}) {
    PlanHeader h = SampleHeader();
    h.storage = kind;
    test::WritePlan(dir.Join("p"), h, {});
    auto reader = PlanReader::Open(dir.Join("p"));
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_EQ((*reader)->header().storage, kind);
  }
}

TEST(PlanFile, EmptyPlan) {
  TempDir dir;
  test::WritePlan(dir.Join("p"), SampleHeader(), {});
  EXPECT_TRUE(test::ReadAllRounds(dir.Join("p")).empty());
}

// Reads the plan and returns the first error (OK if it reads to the end).
Status ReadPlanStatus(const std::string& path) {
  auto reader = PlanReader::Open(path);
  if (!reader.ok()) return reader.status();
  for (int guard = 0; guard < 10000; ++guard) {
    PlanRound r;
    auto more = (*reader)->Next(&r);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
  }
  return Status::Invalid("endless plan");
}

TEST(PlanFile, InvalidIndicesInRound) {
  TempDir dir;
  struct Case {
    const char* what;
    std::function<void(PlanRound&)> damage;
  };
  std::vector<Case> cases = {
      {"dest file out of range", [](PlanRound& r) { r.ops[0].dests[0].file = uint32_t(r.files.size()); }},
      {"dest file far out of range", [](PlanRound& r) { r.ops[1].dests.back().file = 0xffffffffu; }},
      {"source out of range", [](PlanRound& r) { r.ops[0].source = uint32_t(r.files.size()); }},
      {"zero length", [](PlanRound& r) { r.ops[2].length = 0; }},
      {"no destinations", [](PlanRound& r) { r.ops[0].dests.clear(); }},
      {"128 destinations",
       [](PlanRound& r) {
         r.ops[0].dests.clear();
         for (int i = 0; i < 128; ++i) r.ops[0].dests.push_back({1, uint64_t(i) * 4096, 0});
       }},
      {"file on unknown filesystem", [](PlanRound& r) { r.files[1].fs = 2; }},
      {"relative path", [](PlanRound& r) { r.files[0].path = "data/x"; }},
      {"empty path", [](PlanRound& r) { r.files[2].path = ""; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    PlanRound bad = SampleRound(1, 3, 4);
    c.damage(bad);
    test::WritePlan(dir.Join("bad"), SampleHeader(), {SampleRound(0, 3, 4), bad, SampleRound(2, 3, 4)});
    auto reader = PlanReader::Open(dir.Join("bad"));
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    PlanRound r;
    auto first = (*reader)->Next(&r);
    ASSERT_TRUE(first.ok() && *first) << first.status().message();
    auto second = (*reader)->Next(&r);
    ASSERT_FALSE(second.ok());
    EXPECT_TRUE(StatusIs(second.status(), Status::Code::kCorrupt, "round 1"));
    EXPECT_TRUE(StatusIs(second.status(), Status::Code::kCorrupt, dir.Join("bad")));
  }
}

TEST(PlanFile, ExactlyMaxDestinationsAccepted) {
  TempDir dir;
  PlanRound r = SampleRound(0, 2, 1);
  r.ops[0].dests.clear();
  for (size_t i = 0; i < kMaxDedupeDests; ++i) r.ops[0].dests.push_back({1, uint64_t(i) * 4096, 0});
  test::WritePlan(dir.Join("p"), SampleHeader(), {r});
  auto rounds = test::ReadAllRounds(dir.Join("p"));
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].ops[0].dests.size(), kMaxDedupeDests);
}

TEST(PlanFile, ARewriteIsReadOnlyFromAPlanOfVersionTwo) {
  TempDir dir;
  PlanRound r = SampleRound(0, 2, 1);
  r.ops[0].dests.assign(1, {r.ops[0].source, r.ops[0].offset, 0});  // the source range itself
  for (uint32_t version : {kPlanFormatNoRewrite, kPlanFormatVersion}) {
    PlanHeader h = SampleHeader();
    h.format_version = version;
    test::WritePlan(dir.Join("p"), h, {r});
    Status st = ReadPlanStatus(dir.Join("p"));
    if (version == kPlanFormatVersion) {
      EXPECT_OK(st);
    } else {
      EXPECT_TRUE(StatusIs(st, Status::Code::kCorrupt, "a rewrite in round 0 of a plan of format version 1"));
    }
  }
}

TEST(PlanFile, RoundsOutOfOrder) {
  TempDir dir;
  test::WritePlan(dir.Join("p"), SampleHeader(), {SampleRound(0, 2, 1), SampleRound(2, 2, 1)});
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("p")), Status::Code::kCorrupt, "round 2 where round 1"));
}

TEST(PlanFile, TruncatedPlan) {
  TempDir dir;
  const std::vector<PlanRound> rounds = {SampleRound(0, 3, 5), SampleRound(1, 3, 5)};
  // No trailer: the rounds read, then the end is reported as truncation.
  test::WritePlan(dir.Join("nt"), SampleHeader(), rounds, /*finish=*/false);
  auto reader = PlanReader::Open(dir.Join("nt"));
  ASSERT_TRUE(reader.ok());
  PlanRound r;
  for (int i = 0; i < 2; ++i) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok() && *more);
  }
  auto end = (*reader)->Next(&r);
  ASSERT_FALSE(end.ok());
  EXPECT_TRUE(StatusIs(end.status(), Status::Code::kCorrupt, "truncated"));

  // Cut at every offset of a complete plan: never a clean read.
  test::WritePlan(dir.Join("full"), SampleHeader(), rounds);
  const std::string data = test::ReadFile(dir.Join("full"));
  for (size_t len = 0; len < data.size(); ++len) {
    test::WriteFile(dir.Join("cut"), data.substr(0, len));
    Status s = ReadPlanStatus(dir.Join("cut"));
    EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt)) << "cut at " << len;
  }
}

void WritePlanFrames(const std::string& path,
                     const std::vector<std::function<void(schema::PlanFrame::Builder)>>& fills) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok());
  FrameWriter fw((*out)->fd(), path);
  for (const auto& fill : fills) {
    capnp::MallocMessageBuilder msg;
    fill(msg.initRoot<schema::PlanFrame>());
    ASSERT_OK(fw.Write(msg));
  }
  ASSERT_OK((*out)->Commit());
}

TEST(PlanFile, TrailerMismatch) {
  TempDir dir;
  auto header = [](schema::PlanFrame::Builder f) {
    auto h = f.initHeader();
    h.setMagic(kPlanMagic);
    h.setFormatVersion(1);
    h.initFilesystems(1);
  };
  auto trailer = [](uint64_t ops, uint64_t rounds) {
    return [=](schema::PlanFrame::Builder f) {
      auto t = f.initTrailer();
      t.setRecords(ops);
      t.setBatches(rounds);
    };
  };
  WritePlanFrames(dir.Join("ok"), {header, trailer(0, 0)});
  EXPECT_OK(ReadPlanStatus(dir.Join("ok")));
  WritePlanFrames(dir.Join("rounds"), {header, trailer(0, 1)});
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("rounds")), Status::Code::kCorrupt, "trailer"));
  WritePlanFrames(dir.Join("ops"), {header, trailer(4, 0)});
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("ops")), Status::Code::kCorrupt, "trailer"));
  // A second header in the body.
  WritePlanFrames(dir.Join("hdr"), {header, header, trailer(0, 0)});
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("hdr")), Status::Code::kCorrupt, "unexpected"));
  // No header at all.
  WritePlanFrames(dir.Join("nohdr"), {trailer(0, 0)});
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("nohdr")), Status::Code::kCorrupt, "no header"));
}

TEST(PlanFile, DataAfterTrailerIsCorrupt) {
  TempDir dir;
  test::WritePlan(dir.Join("a"), SampleHeader(), {SampleRound(0, 2, 1)});
  test::WritePlan(dir.Join("b"), SampleHeader(), {SampleRound(0, 2, 1)});
  // Two plans run together must not pass as the first one alone.
  test::WriteFile(dir.Join("ab"), test::ReadFile(dir.Join("a")) + test::ReadFile(dir.Join("b")));
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("ab")), Status::Code::kCorrupt, "after the trailer"));
  test::WriteFile(dir.Join("junk"), test::ReadFile(dir.Join("a")) + "junk");
  EXPECT_TRUE(StatusIs(ReadPlanStatus(dir.Join("junk")), Status::Code::kCorrupt));
  EXPECT_OK(ReadPlanStatus(dir.Join("a")));
}

TEST(PlanFile, IndexGivenToPlanReader) {
  TempDir dir;
  IndexHeader ih;
  ih.filesystems.resize(1);
  test::WriteIndex(dir.Join("x.idx"), ih, {});
  auto reader = PlanReader::Open(dir.Join("x.idx"));
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(StatusIs(reader.status(), Status::Code::kCorrupt, "is an extent index"));
  EXPECT_TRUE(StatusIs(reader.status(), Status::Code::kCorrupt, dir.Join("x.idx")));
}

TEST(PlanFile, WrongMagicVersionEmptyGarbage) {
  TempDir dir;
  WritePlanFrames(dir.Join("magic"), {[](schema::PlanFrame::Builder f) { f.initHeader().setMagic("nope"); }});
  EXPECT_TRUE(StatusIs(PlanReader::Open(dir.Join("magic")).status(), Status::Code::kCorrupt, "wrong magic"));

  PlanHeader h = SampleHeader();
  h.format_version = kPlanFormatVersion + 1;
  test::WritePlan(dir.Join("v"), h, {});
  EXPECT_TRUE(StatusIs(PlanReader::Open(dir.Join("v")).status(), Status::Code::kVersion, "newer"));

  test::WriteFile(dir.Join("empty"), "");
  EXPECT_TRUE(StatusIs(PlanReader::Open(dir.Join("empty")).status(), Status::Code::kCorrupt, "empty"));

  test::WriteFile(dir.Join("garbage"), test::RandomBytes(3000, 5));
  EXPECT_TRUE(StatusIs(PlanReader::Open(dir.Join("garbage")).status(), Status::Code::kCorrupt, "not an oans plan"));

  EXPECT_EQ(PlanReader::Open(dir.Join("missing")).status().code(), Status::Code::kIoError);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// A round whose frame fails its checksum is refused, naming the plan and the frame's
// offset, before any of that round is handed out (apply reads the whole plan first).
TEST(PlanFile, DamagedRoundRefusedWithItsOffset) {
  TempDir dir;
  const std::string path = dir.Join("p");
  test::WritePlan(path, SampleHeader(), {SampleRound(0, 3, 4), SampleRound(1, 3, 4), SampleRound(2, 2, 1)});
  std::string data = test::ReadFile(path);
  std::vector<size_t> ends;  // header, three rounds, trailer
  for (size_t at = 0; at < data.size();) {
    size_t n = ZSTD_findFrameCompressedSize(data.data() + at, data.size() - at);
    ASSERT_FALSE(ZSTD_isError(n));
    at += n;
    ends.push_back(at);
  }
  ASSERT_EQ(ends.size(), 5u);
  data[ends[2] - 1] ^= 0x01;  // round 1's checksum
  test::WriteFile(path, data);
  auto reader = PlanReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  PlanRound r;
  auto first = (*reader)->Next(&r);
  ASSERT_TRUE(first.ok() && *first) << first.status().message();
  auto second = (*reader)->Next(&r);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(StatusIs(second.status(), Status::Code::kCorrupt, path));
  EXPECT_TRUE(StatusIs(second.status(), Status::Code::kCorrupt, "damaged"));
  EXPECT_TRUE(StatusIs(second.status(), Status::Code::kCorrupt, "byte " + std::to_string(ends[1])));
}

}  // namespace
}  // namespace oans
