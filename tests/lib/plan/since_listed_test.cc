// --since OLD answered from the index's own list of changes (lib/plan/since_listed.h):
// the same plan as the merge join with OLD, OLD unread, unrelated files left out; a list
// that does not match the records falls back to the join, and a header that cannot be
// is damage.
#include "lib/plan/since_listed.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <random>
#include <sstream>

#include "lib/base/spill.h"
#include "lib/scan/hasher.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

constexpr uint64_t kBs = 128 * 1024;

FsRecord Fs() { return test::BtrfsFs("U", 5, 40, "/r"); }

// A file of `sectors` 4 KiB sectors at `physical`, whose sector sums are given (4 bytes
// each) and whose whole-file and block keys follow from them, as a scan makes them.
FileEntry File(const std::string& name, uint64_t ino, uint64_t physical, const std::vector<uint32_t>& sums,
               int64_t mtime = 1) {
  FileEntry e;
  e.path = "/r/" + name;
  e.dev = 40;
  e.ino = ino;
  e.size = sums.size() * 4096;
  e.mtime_ns = e.ctime_ns = mtime;
  e.nlink = 1;
  e.extents = {{0, physical, e.size, kExtentLast}};
  e.hashed = true;
  e.sum_kind = e.key_kind = 1;
  e.sector_sums.assign(reinterpret_cast<const char*>(sums.data()), sums.size() * 4);
  e.hash = HashBytes(e.sector_sums.data(), e.sector_sums.size());
  for (size_t at = 0; at < e.sector_sums.size(); at += 4 * kBs / 4096)
    e.block_hashes.push_back(HashBytes(e.sector_sums.data() + at, std::min<size_t>(4 * kBs / 4096, e.sector_sums.size() - at)));
  return e;
}

std::vector<uint32_t> Sums(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = rng();
  return v;
}

IndexHeader Header() {
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = {Fs()};
  h.block_size = kBs;
  h.hostname = "host";
  return h;
}

// An index as a followed scan writes it: `carried` first, then `changed` in frames of
// their own, and (with `listed`) the header naming `listed_files` and where they start.
void WriteFollowed(const TempDir& dir, const std::string& path, IndexHeader h, const std::vector<FileEntry>& carried,
                   const std::vector<FileEntry>& changed, bool listed,
                   std::vector<std::pair<uint32_t, uint64_t>> listed_files, int64_t at_shift = 0) {
  auto spool = TempFile::Create(dir.path());
  ASSERT_OK(spool.status());
  IndexWriter body((*spool)->fd(), "spool", 3);
  for (const auto& e : carried) ASSERT_OK(body.Add(e));
  ASSERT_OK(body.Flush());
  struct stat st;
  ASSERT_EQ(fstat((*spool)->fd(), &st), 0);
  for (const auto& e : changed) ASSERT_OK(body.Add(e));
  ASSERT_OK(body.Flush());
  h.changed_known = listed;
  h.changed_files = std::move(listed_files);
  h.changed_at = uint64_t(int64_t(st.st_size) + at_shift);
  auto out = OutputFile::Open(path);
  ASSERT_OK(out.status());
  IndexWriter w(out->get());
  ASSERT_OK(w.WriteHeader(h));
  ASSERT_OK(w.AppendFrames(**spool, body.totals()));
  ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
}

struct Planned {
  Status status;
  PlanStats stats;
  std::string rounds;  // every round's files and operations, as text
};

Planned Plan(const TempDir& dir, const std::string& index, const std::string& since, bool join) {
  PlanOptions o;
  o.indexes = {index};
  o.since = since;
  o.since_join = join;
  o.temp_dir = dir.path();
  o.min_run = 16 * 1024;
  Planned p;
  const std::string path = dir.Join(join ? "join.plan" : "listed.plan");
  auto out = OutputFile::Open(path);
  EXPECT_OK(out.status());
  p.status = RunPlan(o, out->get(), nullptr, &p.stats, nullptr);
  if (!p.status.ok()) return p;
  EXPECT_OK((*out)->Commit());
  std::ostringstream s;
  for (const auto& r : test::ReadAllRounds(path)) {
    s << "round " << r.index << " bytes " << r.bytes << "\n";
    for (const auto& f : r.files) s << "  file " << f.path << " ino " << f.ino << " size " << f.size << "\n";
    for (const auto& op : r.ops) {
      s << "  op " << op.source << " @" << op.offset << " +" << op.length << " phys " << op.physical << ":";
      for (const auto& d : op.dests) s << " " << d.file << "@" << d.offset << "/" << d.physical;
      s << "\n";
    }
  }
  p.rounds = s.str();
  return p;
}

struct Trees {
  std::vector<FileEntry> old_files, carried, changed;
  std::vector<std::pair<uint32_t, uint64_t>> listed;
};

// OLD: whole-file copies, a pair of files sharing a 64 KiB run at another alignment, and
// unrelated files. NEW: one copy rewritten with new data equal to an unrelated file, a
// new file holding a run of another, one file renamed only, one removed; the unchanged
// ones carried first, as a followed scan writes them.
Trees MakeTrees() {
  Trees t;
  const auto a = Sums(1, 40), b = Sums(2, 24), c = Sums(3, 60), u = Sums(4, 12);
  std::vector<uint32_t> shifted = Sums(5, 7);
  shifted.insert(shifted.end(), b.begin(), b.begin() + 20);  // b's first 80 KiB at 28 KiB
  t.old_files = {File("a1", 10, 1 << 20, a),     File("a2", 11, 2 << 20, a),       File("b", 12, 3 << 20, b),
                 File("bs", 13, 4 << 20, shifted), File("c", 14, 5 << 20, c),      File("u1", 15, 6 << 20, u),
                 File("u2", 16, 7 << 20, u),       File("gone", 17, 8 << 20, Sums(6, 9))};
  auto renamed = t.old_files[4];
  renamed.path = "/r/c.renamed";  // a rename changes nothing the planner compares
  t.carried = {t.old_files[0], t.old_files[2], renamed, t.old_files[5], t.old_files[6]};
  std::vector<uint32_t> with_run = Sums(7, 5);
  with_run.insert(with_run.end(), c.begin() + 4, c.begin() + 52);  // 192 KiB of c
  FileEntry fresh = File("new", 20, 10 << 20, with_run);  // new, with a run of c inside,
  // written in two parts: the run is an extent of its own, which sharing it frees
  fresh.extents = {{0, 10 << 20, 5 * 4096, 0}, {5 * 4096, 11 << 20, 48 * 4096, kExtentLast}};
  t.changed = {File("a2", 11, 9 << 20, c, 2),     // rewritten: now a copy of c
               File("bs", 13, 4 << 20, shifted),  // reported by btrfs, nothing changed
               fresh};
  t.listed = {{0, 11}, {0, 20}};
  return t;
}

// OLD written (created at 111) and the header of an index that followed it.
struct Indexes {
  Indexes() {
    old_h.created_ns = 111;
    test::WriteIndex(dir.Join("old.idx"), old_h, t.old_files, 3);
    now.created_ns = 222;
    now.followed_from = 111;
  }
  TempDir dir;
  Trees t = MakeTrees();
  IndexHeader old_h = Header(), now = Header();
};

TEST(SinceListed, PlansWhatTheJoinPlansWithoutReadingOld) {
  Indexes x;
  const TempDir& dir = x.dir;
  const Trees& t = x.t;
  const IndexHeader& old_h = x.old_h;
  WriteFollowed(dir, dir.Join("new.idx"), x.now, t.carried, t.changed, true, t.listed);

  Planned join = Plan(dir, dir.Join("new.idx"), dir.Join("old.idx"), true);
  ASSERT_OK(join.status);
  EXPECT_FALSE(join.stats.since_listed);
  Planned listed = Plan(dir, dir.Join("new.idx"), dir.Join("old.idx"), false);
  ASSERT_OK(listed.status);
  EXPECT_TRUE(listed.stats.since_listed);
  EXPECT_EQ(listed.rounds, join.rounds);
  EXPECT_NE(join.rounds.find("/r/new"), std::string::npos) << join.rounds;    // the run of c
  EXPECT_NE(join.rounds.find("/r/a2"), std::string::npos) << join.rounds;     // the copy of c
  EXPECT_EQ(join.rounds.find("/r/bs"), std::string::npos) << join.rounds;     // unchanged: not planned
  EXPECT_EQ(listed.stats.whole_groups, join.stats.whole_groups);
  EXPECT_EQ(listed.stats.duplicate_bytes, join.stats.duplicate_bytes);
  EXPECT_EQ(listed.stats.planned_bytes, join.stats.planned_bytes);
  // a1, b, bs, u1 and u2 share nothing with a2 or new: left out; c.renamed is loaded.
  EXPECT_EQ(listed.stats.since_left_out, 5u);
  EXPECT_EQ(listed.stats.files, 3u);
  EXPECT_EQ(join.stats.files, 8u);

  // OLD is not read at all: the plan is the same without it there.
  ASSERT_EQ(rename(dir.Join("old.idx").c_str(), dir.Join("old.moved").c_str()), 0);
  test::WriteIndex(dir.Join("old.idx"), old_h, {}, 3);  // the same header, no records
  Planned again = Plan(dir, dir.Join("new.idx"), dir.Join("old.idx"), false);
  ASSERT_OK(again.status);
  EXPECT_EQ(again.rounds, listed.rounds);
}

TEST(SinceListed, OnlyForTheIndexFollowedFrom) {
  Indexes x;
  const TempDir& dir = x.dir;
  const Trees& t = x.t;
  IndexHeader now = x.now;
  now.followed_from = 110;  // another index
  WriteFollowed(dir, dir.Join("new.idx"), now, t.carried, t.changed, true, t.listed);
  Planned p = Plan(dir, dir.Join("new.idx"), dir.Join("old.idx"), false);
  ASSERT_OK(p.status);
  EXPECT_FALSE(p.stats.since_listed);
  now.followed_from = 111;
  WriteFollowed(dir, dir.Join("unlisted.idx"), now, t.carried, t.changed, false, {});
  p = Plan(dir, dir.Join("unlisted.idx"), dir.Join("old.idx"), false);
  ASSERT_OK(p.status);
  EXPECT_FALSE(p.stats.since_listed);
  EXPECT_EQ(p.stats.files, 8u);
}

// A list that cannot be used is said and the plan joins the two indexes: the same plan.
TEST(SinceListed, AListThatCannotBeUsedFallsBackToTheJoin) {
  Indexes x;
  const TempDir& dir = x.dir;
  const Trees& t = x.t;
  const IndexHeader& now = x.now;
  WriteFollowed(dir, dir.Join("good.idx"), now, t.carried, t.changed, true, t.listed);
  Planned good = Plan(dir, dir.Join("good.idx"), dir.Join("old.idx"), true);
  ASSERT_OK(good.status);
  auto joined = [&](const std::string& name) {
    Planned p = Plan(dir, dir.Join(name), dir.Join("old.idx"), false);
    EXPECT_TRUE(p.status.ok()) << name << ": " << p.status.message();
    EXPECT_FALSE(p.stats.since_listed) << name;
    EXPECT_EQ(p.rounds, good.rounds) << name;
  };
  // A listed file that is not among the records after the offset.
  auto listed = t.listed;
  listed.push_back({0, 15});
  WriteFollowed(dir, dir.Join("extra.idx"), now, t.carried, t.changed, true, listed);
  joined("extra.idx");
  // An offset inside a frame, and one past the end of the file.
  WriteFollowed(dir, dir.Join("inside.idx"), now, t.carried, t.changed, true, t.listed, 5);
  joined("inside.idx");
  WriteFollowed(dir, dir.Join("past.idx"), now, t.carried, t.changed, true, t.listed, 1 << 20);
  joined("past.idx");
  // Another index after it in the same file: its changes are not listed. (The join
  // then sees its own files as well; the plan is the join's.)
  test::WriteFile(dir.Join("two.idx"), test::ReadFile(dir.Join("good.idx")) + test::ReadFile(dir.Join("old.idx")));
  Planned two = Plan(dir, dir.Join("two.idx"), dir.Join("old.idx"), false);
  ASSERT_OK(two.status);
  EXPECT_FALSE(two.stats.since_listed);
  EXPECT_EQ(two.rounds, Plan(dir, dir.Join("two.idx"), dir.Join("old.idx"), true).rounds);
}

TEST(SinceListed, AHeaderListingAnUnknownFilesystemIsDamage) {
  Indexes x;
  WriteFollowed(x.dir, x.dir.Join("fs.idx"), x.now, x.t.carried, x.t.changed, true, {{3, 11}});
  Planned p = Plan(x.dir, x.dir.Join("fs.idx"), x.dir.Join("old.idx"), false);
  EXPECT_TRUE(StatusIs(p.status, Status::Code::kCorrupt, "fs.idx is damaged")) << p.status.message();
}

}  // namespace
}  // namespace oans
