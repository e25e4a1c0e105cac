// 4 KiB partial matches from sector sums (lib/plan/anchors.h): anchors, extension, and
// the separation of kinds.
#include "lib/plan/anchors.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "lib/plan/ops.h"
#include "lib/plan/planner.h"
#include "lib/scan/sector_sums.h"
#include "tests/lib/plan/stage_util.h"

namespace oans {
namespace {

constexpr uint64_t kS = 4096;

std::string RandomSums(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s;
  for (size_t i = 0; i < n; ++i) PutSum(&s, uint32_t(rng()));
  return s;
}

// Files with the given sums, each one extent at its own place, anchored and planned.
struct Partial {
  explicit Partial(uint64_t min_run = 64 << 10) {
    s.options.min_run = min_run;
    s.st = std::make_unique<PlanState>(s.options, &s.observer, &s.stats);
    FsRecord fs;
    fs.uuid = "U";
    fs.block_size = 4096;
    s.st->header.filesystems = {fs};
    s.st->header.block_size = 128 * 1024;
    s.st->header.round_size = s.options.round_size;
  }
  // Files on btrfs from here on: partial runs only where they free extents (frees.h).
  void OnBtrfs() { s.st->header.filesystems[0].type = "btrfs"; }
  uint32_t Add(const std::string& sums, std::vector<FiemapExtent> extents = {}) {
    const uint64_t size = sums.size() / 4 * kS;
    const uint32_t id = s.AddFile(size, (uint64_t(s.st->details.size()) + 1) << 36);
    if (!extents.empty()) {
      // Replace the details by a file of these extents.
      Detail d;
      d.ino = 5000 + id;
      d.size = size;
      d.extents = std::move(extents);
      d.first_physical = d.extents[0].physical;
      auto again = s.st->details.Add(d, "/r/x" + std::to_string(id));
      EXPECT_TRUE(again.ok());
      for (auto* v : {&s.st->changed, &s.st->dropped, &s.st->is_dest, &s.st->op_files}) v->push_back(v == &s.st->changed);
      s.st->dropped[id] = true;
      s.SetSums(*again, sums);
      EXPECT_OK(AddAnchors(*s.st, sums, 1, *again));
      return *again;
    }
    s.SetSums(id, sums);
    EXPECT_OK(AddAnchors(*s.st, sums, 1, id));
    return id;
  }
  uint64_t Plan() {
    EXPECT_OK(test::PlanAnchors(*s.st));
    return s.stats.planned_bytes;
  }
  // The planned operations: (source, offset, length, destination, offset).
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t, uint32_t, uint64_t>> Ops() {
    std::vector<std::tuple<uint32_t, uint64_t, uint64_t, uint32_t, uint64_t>> out;
    std::string scratch;
    EXPECT_OK(s.st->ops.ForEach([&](const OpKey& k) {
      PlanOp op;
      EXPECT_OK(OpOfKey(*s.st, k, &scratch, &op));
      for (const auto& d : op.dests) out.emplace_back(op.source, op.offset, op.length, d.file, d.offset);
      return Status::Ok();
    }));
    return out;
  }
  test::Stage s;
};

TEST(Anchors, ExtendFindsTheLongestRunBothWays) {
  const std::string a = RandomSums(100, 1);
  std::string b = RandomSums(5, 2) + a.substr(0, 60 * 4) + RandomSums(1, 3) + a.substr(61 * 4);
  SectorRun r = Extend(a, b, 30, 35, false);
  EXPECT_EQ(r.s, 0u);
  EXPECT_EQ(r.d, 5u);
  EXPECT_EQ(r.length, 60u);
  r = Extend(a, b, 70, 75, false);
  EXPECT_EQ(r.s, 61u);
  EXPECT_EQ(r.length, 39u);
  EXPECT_EQ(Extend(a, b, 30, 36, false).length, 0u);  // not equal there: nothing
  // Inside one file a run never overlaps its copy.
  const std::string rep = RandomSums(10, 4);
  const std::string f = rep + rep + rep;
  r = Extend(f, f, 0, 10, true);
  EXPECT_EQ(r.length, 10u);
  EXPECT_EQ(Extend(f, f, 5, 5, true).length, 0u);
}

TEST(Anchors, WalkFindsEveryStretchBetweenScatteredChanges) {
  const std::string a = RandomSums(200, 11);
  std::string b = a;
  // Sectors 50, 53 and 54 differ; after 120 a gap wider than kWalkGap.
  for (size_t at : {50, 53, 54}) b.replace(4 * at, 4, RandomSums(1, 100 + at));
  b.replace(4 * 120, 4 * (kWalkGap + 1), RandomSums(kWalkGap + 1, 12));
  const std::vector<SectorRun> runs = Walk(a, b, 10, 10, false);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].s, 0u);
  EXPECT_EQ(runs[0].length, 50u);
  EXPECT_EQ(runs[1].s, 51u);  // two sectors, too short for any anchor
  EXPECT_EQ(runs[1].length, 2u);
  EXPECT_EQ(runs[2].s, 55u);
  EXPECT_EQ(runs[2].length, 65u);
  // From the far side of the wide gap, only what lies beyond it.
  const std::vector<SectorRun> far = Walk(a, b, 150, 150, false);
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].s, 120u + kWalkGap + 1);
  // Backwards from the middle finds the same stretches.
  EXPECT_EQ(Walk(a, b, 100, 100, false).size(), 3u);
  // Inside one file, no run overlaps its copy.
  const std::string rep = RandomSums(10, 4);
  for (const SectorRun& r : Walk(rep + rep + rep, rep + rep + rep, 0, 10, true)) EXPECT_LE(r.length, 10u);
}

TEST(Anchors, AFileShiftedBy12KiBIsFound) {
  Partial p;
  const std::string a = RandomSums(4096, 7);  // 16 MiB
  const uint32_t x = p.Add(a), y = p.Add(RandomSums(3, 8) + a);
  const uint64_t planned = p.Plan();
  EXPECT_GE(planned, a.size() / 4 * kS * 95 / 100);
  EXPECT_LE(planned, a.size() / 4 * kS);
  for (const auto& [src, off, len, dst, doff] : p.Ops()) {
    EXPECT_EQ(src, x);
    EXPECT_EQ(dst, y);
    EXPECT_EQ(doff, off + 3 * kS);
  }
}

TEST(Anchors, OnePercentOfSectorsChangedLeavesLittleUnshared) {
  Partial p;
  const size_t n = 65536;  // 256 MiB
  const std::string a = RandomSums(n, 9);
  std::string b = a;
  std::mt19937_64 rng(10);
  for (size_t k = 0; k < n / 100; ++k) {
    const size_t at = rng() % n;
    const std::string other = RandomSums(1, rng());
    b.replace(4 * at, 4, other);
  }
  p.Add(a);
  p.Add(b);
  EXPECT_GE(p.Plan(), n * kS - (8u << 20));
}

// A 16 MiB file and a copy of it with 40 scattered sectors rewritten in place: the copy's
// untouched pieces stay where its extent was, each rewritten sector is an extent of its
// own elsewhere.
struct RewrittenCopy {
  static constexpr size_t kSectors = 4096;
  RewrittenCopy() : RewrittenCopy(RandomSums(kSectors, 21), 22, 7) {}
  // A copy of `of`, written at (base << 36), then 40 sectors rewritten elsewhere.
  RewrittenCopy(const std::string& of, uint64_t seed, uint64_t base_at) : a(of), b(a) {
    std::mt19937_64 rng(seed);
    while (changed.size() < 40) changed.insert(rng() % kSectors);
    uint64_t next = 0;
    const uint64_t base = base_at << 36, fresh = (base_at + 1) << 36;
    size_t start = 0;
    for (size_t i = 0; i <= kSectors; ++i) {
      if (i < kSectors && !changed.count(i)) continue;
      if (i > start) b_extents.push_back({start * kS, base + start * kS, (i - start) * kS, 0});
      if (i < kSectors) {
        b.replace(4 * i, 4, RandomSums(1, seed * 100000 + i));
        b_extents.push_back({i * kS, fresh + next++ * kS, kS, 0});
      }
      start = i + 1;
    }
    b_extents.back().flags |= kExtentLast;
  }
  std::string a, b;
  std::set<size_t> changed;
  std::vector<FiemapExtent> b_extents;
};

TEST(Anchors, OnBtrfsARewrittenCopyGoesFreeWhicheverFileComesFirst) {
  for (bool copy_first : {false, true}) {
    RewrittenCopy c;
    Partial p;
    p.OnBtrfs();
    uint32_t copy = 0;
    if (copy_first) copy = p.Add(c.b, c.b_extents);
    const uint32_t orig = p.Add(c.a);
    if (!copy_first) copy = p.Add(c.b, c.b_extents);
    // Every untouched sector, even the short stretches between close changes that hold
    // no anchor, goes to the copy's destination side: its old extent goes free.
    EXPECT_EQ(p.Plan(), (RewrittenCopy::kSectors - c.changed.size()) * kS) << copy_first;
    for (const auto& [src, off, len, dst, doff] : p.Ops()) {
      EXPECT_EQ(src, orig);
      EXPECT_EQ(dst, copy);
      EXPECT_EQ(off, doff);
      for (uint64_t x = doff / kS; x < (doff + len) / kS; ++x) EXPECT_FALSE(c.changed.count(x)) << x;
    }
  }
}

TEST(Anchors, OnBtrfsACopyOfARewrittenCopyGoesFreeToo) {
  // B: a copy of A rewritten in place; C: a copy of B rewritten in place. B is the
  // destination of A's runs and the source of C's: those run after B's own, in a pass
  // of their own, so that C shares A's extents and B's old extent is left to go free.
  RewrittenCopy ab;
  RewrittenCopy bc(ab.b, 23, 11);
  Partial p;
  p.OnBtrfs();
  // A lies after B on disk: by physical order alone, B's operations would come first.
  const uint32_t a = p.Add(ab.a, {{0, 20ull << 36, RewrittenCopy::kSectors * kS, kExtentLast}});
  const uint32_t b = p.Add(ab.b, ab.b_extents), c = p.Add(bc.b, bc.b_extents);
  const uint64_t planned = p.Plan();
  EXPECT_EQ(planned, 2 * (RewrittenCopy::kSectors - 40) * kS);
  bool second_pass = false;
  for (const auto& [src, off, len, dst, doff] : p.Ops()) {
    if (src == a) {
      EXPECT_EQ(dst, b);
      EXPECT_FALSE(second_pass) << "an operation into b after one out of it";
    } else {
      EXPECT_EQ(src, b);
      EXPECT_EQ(dst, c);
      second_pass = true;
    }
  }
  EXPECT_TRUE(second_pass);
}

TEST(Anchors, OnBtrfsACopyWrittenInOneGoIsLeftAloneWithoutRewriting) {
  RewrittenCopy c;
  Partial p;
  p.s.options.max_rewrite = 0;
  p.OnBtrfs();
  p.Add(c.a);
  p.Add(c.b);  // one extent: sharing its common parts would free nothing
  EXPECT_EQ(p.Plan(), 0u);
  EXPECT_EQ(p.s.stats.partial_left_bytes, (RewrittenCopy::kSectors - c.changed.size()) * kS);
  EXPECT_EQ(p.s.stats.rewrite_bytes, 0u);
}

TEST(Anchors, OnBtrfsACopyWrittenInOneGoGoesFreeByRewritingWhatDiffers) {
  RewrittenCopy c;
  Partial p;
  p.OnBtrfs();
  const uint32_t a = p.Add(c.a), b = p.Add(c.b);
  const uint64_t planned = p.Plan(), rewritten = p.s.stats.rewrite_bytes;
  // Every byte of b's one extent is either shared with a or copied to a new extent.
  EXPECT_EQ(planned + rewritten, RewrittenCopy::kSectors * kS);
  EXPECT_GE(rewritten, c.changed.size() * kS);
  EXPECT_LE(rewritten * 10, RewrittenCopy::kSectors * kS);
  std::set<uint64_t> copied;
  for (const auto& [src, off, len, dst, doff] : p.Ops()) {
    EXPECT_EQ(dst, b);
    if (src == b) {
      EXPECT_EQ(off, doff);  // a rewrite: the range itself
      for (uint64_t x = off / kS; x < (off + len) / kS; ++x) copied.insert(x);
    } else {
      EXPECT_EQ(src, a);
    }
  }
  for (size_t x : c.changed) EXPECT_TRUE(copied.count(x)) << x;
}

TEST(Anchors, RepeatsInsideOneFileAreFound) {
  Partial p;
  const std::string x = RandomSums(256, 11);
  const uint32_t f = p.Add(x + RandomSums(10, 12) + x);
  EXPECT_EQ(p.Plan(), 256 * kS);
  auto ops = p.Ops();
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(std::get<0>(ops[0]), f);
  EXPECT_EQ(std::get<3>(ops[0]), f);
}

TEST(Anchors, RunsShorterThanTheMinimumAreLeftOut) {
  const std::string a = RandomSums(64, 13);
  for (uint64_t min_run : {uint64_t(64) * kS, uint64_t(65) * kS}) {
    Partial p(min_run);
    p.Add(a);
    p.Add(RandomSums(1, 14) + a);
    EXPECT_EQ(p.Plan(), min_run == 64 * kS ? 64 * kS : 0u) << min_run;
  }
}

// A compressed extent is shared whole or not at all: a run crossing its edge stops there.
TEST(Anchors, ACompressedExtentIsNeverPartlyShared) {
  Partial p;
  const std::string a = RandomSums(128, 15);
  p.Add(a);
  // The destination's sectors 64..96 are one compressed extent; the run covers 0..80 of it.
  const std::string b = a.substr(0, 80 * 4) + RandomSums(48, 16);
  p.Add(b, {{0, 7ull << 36, 64 * kS, 0}, {64 * kS, 8ull << 36, 32 * kS, kExtentEncoded}, {96 * kS, 9ull << 36, 32 * kS, kExtentLast}});
  EXPECT_EQ(p.Plan(), 64 * kS);
}

// Already sharing the source's extents: counted, not planned.
TEST(Anchors, SharedRangesAreNotPlanned) {
  Partial p;
  const std::string a = RandomSums(64, 17);
  p.Add(a, {{0, 3ull << 36, 64 * kS, kExtentLast}});
  p.Add(a, {{0, 3ull << 36, 64 * kS, kExtentLast}});
  EXPECT_EQ(p.Plan(), 0u);
  EXPECT_EQ(p.s.stats.shared_bytes, 64 * kS);
}

// ---- Key kinds, through RunPlan: keys of different kinds never pair ----------------

FileEntry Entry(uint64_t ino, uint8_t key_kind, uint8_t sum_kind, const std::string& sums) {
  FileEntry e;
  e.path = "/r/f" + std::to_string(ino);
  e.ino = ino;
  e.dev = 1;
  e.size = sums.size() / 4 * kS;
  e.mtime_ns = e.ctime_ns = 1;
  e.nlink = 1;
  e.extents = {{0, ino << 36, e.size, kExtentLast}};
  e.hashed = true;
  e.hash = {42, 42};  // equal whole keys
  e.key_kind = key_kind;
  e.sum_kind = sum_kind;
  e.sector_sums = sums;
  return e;
}

PlanStats PlanOf(const std::vector<FileEntry>& files) {
  test::TempDir dir;
  IndexHeader h;
  h.roots = {"/r"};
  FsRecord fs;
  fs.uuid = "U";
  fs.subvolume = 5;
  fs.type = "btrfs";
  h.filesystems = {fs};
  test::WriteIndex(dir.Join("a.idx"), h, files);
  PlanOptions o;
  o.indexes = {dir.Join("a.idx")};
  o.temp_dir = dir.path();
  PlanStats stats;
  EXPECT_OK(RunPlan(o, nullptr, nullptr, &stats));
  return stats;
}

TEST(KeyKinds, EqualKeysOfDifferentKindsNeverPair) {
  const std::string sums = RandomSums(64, 18);
  // Same kinds: a whole-file group (the control).
  PlanStats same = PlanOf({Entry(1, 1, 1, sums), Entry(2, 1, 1, sums)});
  EXPECT_EQ(same.whole_groups, 1u);
  EXPECT_EQ(same.duplicate_bytes, 64 * kS);
  // A key made from btrfs crc32c checksums and one of data (XXH3-128), equal values:
  // no group. Their crc32c sums are comparable, though: found as a partial match.
  PlanStats data = PlanOf({Entry(1, 1, 1, sums), Entry(2, 0, 1, sums)});
  EXPECT_EQ(data.whole_groups, 0u);
  EXPECT_EQ(data.partial_bytes, 64 * kS);
  // crc32c and xxhash64 sums of equal values: nothing at all.
  PlanStats other = PlanOf({Entry(1, 1, 1, sums), Entry(2, 2, 2, sums)});
  EXPECT_EQ(other.whole_groups, 0u);
  EXPECT_EQ(other.duplicate_bytes, 0u);
  EXPECT_EQ(other.planned_bytes, 0u);
}

}  // namespace
}  // namespace oans
