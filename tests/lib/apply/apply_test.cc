#include "lib/apply/apply.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "lib/apply/journal.h"
#include "lib/base/json.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

const char kUuid[] = "UUID-T";

struct Call {
  std::string src;
  uint64_t src_offset = 0, length = 0;
  std::vector<std::pair<std::string, uint64_t>> dests;  // path, offset
};

// Real files for open/stat/read; FIDEDUPERANGE and filesystem identity are simulated.
class FakeSys : public test::ForwardingSys {
 public:
  std::string uuid = kUuid;
  uint64_t subvolume = 5;
  // Decides the outcome of a call; the default dedupes everything.
  std::function<Status(const Call&, std::vector<DedupeDest>*)> on_dedupe;

  int read_delay_ms = 0;  // each pread waits this long first (a slow disk)
  // The default dedupe compares the bytes of the source and each destination, as the
  // kernel does, instead of calling them equal.
  bool compare_bytes = false;
  // Called after each write to a temporary file (the copy of a rewrite).
  std::function<void()> after_pwrite;
  std::function<Result<int>(int)> on_tmpfile;   // instead of creating one
  std::map<std::string, uint32_t> inode_flags;  // by path
  std::string dir_uuid;                          // Identify() of directories, when set
  std::set<std::string> shared;                  // paths whose extents FIEMAP calls shared
  int pwrite_error = 0;                          // errno of every write, when set
  std::function<void()> on_fiemap;
  std::vector<SpaceUse> space;  // MeasureSpace's answers in turn; none: unmeasured
  size_t space_asked = 0;

  Result<SpaceUse> MeasureSpace(int fd) override {
    (void)fd;
    std::lock_guard<std::mutex> lk(mu_);
    if (space_asked >= space.size()) return Status::Invalid("not measured");
    return space[space_asked++];
  }

  Result<int> OpenNoFollow(const std::string& path) override {
    auto fd = ForwardingSys::OpenNoFollow(path);
    std::lock_guard<std::mutex> lk(mu_);
    opened_paths_.push_back(path);
    sequence_.push_back("open " + path);
    if (fd.ok()) fds_[*fd] = path;
    return fd;
  }
  Result<int> OpenDirNoFollow(const std::string& path) override {
    auto fd = ForwardingSys::OpenDirNoFollow(path);
    std::lock_guard<std::mutex> lk(mu_);
    if (fd.ok()) fds_[*fd] = path, dirs_.insert(*fd);
    return fd;
  }
  Result<int> OpenTmpfile(int dirfd) override {
    auto fd = on_tmpfile ? on_tmpfile(dirfd) : ForwardingSys::OpenTmpfile(dirfd);
    std::lock_guard<std::mutex> lk(mu_);
    events_.push_back("tmpfile in " + fds_[dirfd]);
    if (fd.ok()) fds_[*fd] = "tmpfile";
    return fd;
  }
  Status SetInodeFlags(int fd, uint32_t flags) override {
    std::lock_guard<std::mutex> lk(mu_);
    events_.push_back("setflags " + fds_[fd] + " " + std::to_string(flags));
    inode_flags[fds_[fd]] = flags;
    return Status::Ok();
  }
  Status Pwrite(int fd, const void* buf, size_t len, uint64_t offset) override {
    if (pwrite_error) return Status::Io("write", pwrite_error);
    Status st = ForwardingSys::Pwrite(fd, buf, len, offset);
    {
      std::lock_guard<std::mutex> lk(mu_);
      events_.push_back("write " + fds_[fd] + " " + std::to_string(offset) + "+" + std::to_string(len));
    }
    if (after_pwrite) after_pwrite();
    return st;
  }
  // One extent over the range, shared for the paths in `shared` (the files here are on
  // whatever filesystem holds the test directory).
  Status FiemapRange(int fd, uint64_t offset, uint64_t length, std::vector<FiemapExtent>* out) override {
    if (on_fiemap) on_fiemap();  // after the file was opened and checked, before its copy
    std::lock_guard<std::mutex> lk(mu_);
    out->assign(1, {offset, 1u << 30, length, shared.count(fds_[fd]) ? kExtentShared : 0u});
    return Status::Ok();
  }
  uint32_t InodeFlags(int fd) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = inode_flags.find(fds_[fd]);
    return it == inode_flags.end() ? 0 : it->second;
  }
  void Close(int fd) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (fd >= 0 && !fds_.erase(fd)) ADD_FAILURE() << "closing fd " << fd << " that is not open";
      dirs_.erase(fd);
    }
    ForwardingSys::Close(fd);
  }
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    if (read_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(read_delay_ms));
    {
      std::lock_guard<std::mutex> lk(mu_);
      preads_++;
      reads_.push_back({fds_.count(fd) ? fds_[fd] : "?", offset});
      sequence_.push_back("read " + (fds_.count(fd) ? fds_[fd] : "?"));
    }
    return ForwardingSys::Pread(fd, buf, len, offset);
  }
  Status Syncfs(int fd) override {
    std::lock_guard<std::mutex> lk(mu_);
    sequence_.push_back("syncfs " + (fds_.count(fd) ? fds_[fd] : "?"));
    return Status::Ok();
  }
  void WillNeed(int fd, uint64_t offset, uint64_t length) override {
    std::lock_guard<std::mutex> lk(mu_);
    hints_.push_back({fds_.count(fd) ? fds_[fd] : "?", offset});
    (void)length;
  }
  void DontNeed(int fd, uint64_t offset, uint64_t length) override {
    std::lock_guard<std::mutex> lk(mu_);
    events_.push_back("drop " + (fds_.count(fd) ? fds_[fd] : "?") + " " + std::to_string(offset) + "+" +
                      std::to_string(length));
  }
  // Dedupe calls ("dedupe SRC") and page cache drops ("drop PATH OFFSET+LENGTH"), in order.
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lk(mu_);
    return events_;
  }
  // Every read-ahead hint in the order made: path, offset.
  std::vector<std::pair<std::string, uint64_t>> hints() {
    std::lock_guard<std::mutex> lk(mu_);
    return hints_;
  }
  Result<FsIdentity> Identify(int fd) override {
    FsIdentity id;
    id.type = "btrfs";
    {
      std::lock_guard<std::mutex> lk(mu_);
      id.uuid = dirs_.count(fd) && !dir_uuid.empty() ? dir_uuid : uuid;
    }
    id.subvolume = subvolume;
    return id;
  }
  Status DedupeRange(int src_fd, uint64_t src_offset, uint64_t length, std::vector<DedupeDest>* dests) override {
    Call c;
    {
      std::lock_guard<std::mutex> lk(mu_);
      c.src = fds_.count(src_fd) ? fds_[src_fd] : "?";
      c.src_offset = src_offset;
      c.length = length;
      for (const auto& d : *dests) c.dests.push_back({fds_.count(d.fd) ? fds_[d.fd] : "?", d.offset});
      calls_.push_back(c);
      events_.push_back("dedupe " + c.src);
      if (calls_.size() > 1000) return Status::Io("endless loop", ELOOP);
    }
    if (dests->empty() || dests->size() > kMaxDedupeDests) ADD_FAILURE() << "bad destination count";
    if (on_dedupe) return on_dedupe(c, dests);
    for (auto& d : *dests) {
      d.status = kDedupeSame;
      d.bytes_deduped = length;
      if (compare_bytes && Bytes(src_fd, src_offset, length) != Bytes(d.fd, d.offset, length))
        d.status = kDedupeDiffers, d.bytes_deduped = 0;
    }
    return Status::Ok();
  }

  std::vector<Call> calls() {
    std::lock_guard<std::mutex> lk(mu_);
    return calls_;
  }
  size_t open_fds() {
    std::lock_guard<std::mutex> lk(mu_);
    return fds_.size();
  }
  int preads() {
    std::lock_guard<std::mutex> lk(mu_);
    return preads_;
  }
  // Every pread in the order made: path, offset.
  std::vector<std::pair<std::string, uint64_t>> reads() {
    std::lock_guard<std::mutex> lk(mu_);
    return reads_;
  }
  void ClearRecords() {
    std::lock_guard<std::mutex> lk(mu_);
    calls_.clear();
    reads_.clear();
    hints_.clear();
    events_.clear();
    opened_paths_.clear();
    sequence_.clear();
    preads_ = 0;
  }
  // Opens, reads and commits, in the order made: "open PATH", "read PATH", "syncfs PATH".
  std::vector<std::string> sequence() {
    std::lock_guard<std::mutex> lk(mu_);
    return sequence_;
  }
  bool Opened(const std::string& path) {
    std::lock_guard<std::mutex> lk(mu_);
    return std::find(opened_paths_.begin(), opened_paths_.end(), path) != opened_paths_.end();
  }

 private:
  std::string Bytes(int fd, uint64_t offset, uint64_t length) {
    std::string b(length, '\0');
    auto n = ForwardingSys::Pread(fd, b.data(), length, offset);
    b.resize(n.ok() ? *n : 0);
    return b;
  }
  std::mutex mu_;
  std::set<int> dirs_;
  std::map<int, std::string> fds_;
  std::vector<Call> calls_;
  std::vector<std::string> opened_paths_, events_, sequence_;
  std::vector<std::pair<std::string, uint64_t>> reads_, hints_;
  int preads_ = 0;
};

class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = parent_.Join("root");
    test::MakeDir(root_);
    for (const char* n : {"s", "a", "b", "c", "d", "e", "f"}) test::WriteFile(P(n), std::string(16384, n[0]));
  }
  std::string P(const std::string& rel) const { return root_ + "/" + rel; }

  PlanFileRef Ref(const std::string& path) const {
    FileStat st = test::StatPath(path);
    return {path, 0, st.dev, st.ino, st.size, st.mtime_ns, st.nlink, {}};
  }
  PlanHeader Header(uint64_t rounds) const {
    PlanHeader h;
    h.roots = {root_};
    FsRecord f;
    f.uuid = kUuid;
    f.subvolume = 5;
    f.type = "btrfs";
    h.filesystems = {f};
    h.rounds = rounds;
    return h;
  }
  // A round whose files are `names` (by index) and ops source -> dests at offset 0.
  static PlanRound Round(uint64_t index, std::vector<PlanFileRef> files,
                         std::vector<std::pair<uint32_t, std::vector<uint32_t>>> ops, uint64_t length = 8192) {
    PlanRound r;
    r.index = index;
    r.files = std::move(files);
    uint64_t phys = 1000;
    for (auto& [src, dests] : ops) {
      PlanOp op;
      op.source = src;
      op.length = length;
      op.physical = phys++;
      for (uint32_t d : dests) op.dests.push_back({d, 0, 0});
      r.bytes += length * (1 + dests.size());
      r.ops.push_back(op);
    }
    return r;
  }

  Status Apply(const PlanHeader& h, const std::vector<PlanRound>& rounds, ApplyStats* stats,
               ApplyOptions o = {}, bool finish = true) {
    const std::string plan = parent_.Join("p.plan");
    test::WritePlan(plan, h, rounds, finish);
    auto reader = PlanReader::Open(plan);
    if (!reader.ok()) return reader.status();
    Status s = RunApply(sys_, **reader, o, nullptr, stats);
    EXPECT_EQ(sys_.open_fds(), 0u) << "descriptors left open";
    return s;
  }

  // n rounds; round i dedupes ri.b against ri.a (files made here).
  std::vector<PlanRound> Rounds(int n) const {
    std::vector<PlanRound> rounds;
    for (int i = 0; i < n; ++i) {
      const std::string a = P("r" + std::to_string(i) + ".a"), b = P("r" + std::to_string(i) + ".b");
      test::WriteFile(a, std::string(16384, char('a' + i % 26)));
      test::WriteFile(b, std::string(16384, char('a' + i % 26)));
      rounds.push_back(Round(uint64_t(i), {Ref(a), Ref(b)}, {{0, {1}}}));
    }
    return rounds;
  }
  // The rounds of Rounds() that the calls so far belong to, in the order they ran.
  std::vector<size_t> RoundsRun() {
    std::vector<size_t> out;
    for (const auto& c : sys_.calls()) out.push_back(std::stoul(c.src.substr(root_.size() + 2)));
    return out;
  }
  static std::vector<size_t> Iota(size_t n) {
    std::vector<size_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = i;
    return v;
  }

  TempDir parent_;
  std::string root_;
  FakeSys sys_;
};

TEST_F(ApplyTest, RunsEveryOperation) {
  std::vector<PlanRound> rounds = {Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}}),
                                   Round(1, {Ref(P("c")), Ref(P("d"))}, {{0, {1}}, {1, {0}}}, 4096)};
  rounds[1].ops[1].offset = 4096;
  rounds[1].ops[1].dests[0].offset = 8192;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(2), rounds, &stats));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].src, P("s"));
  EXPECT_EQ(calls[0].length, 8192u);
  EXPECT_EQ(calls[0].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("a"), 0}, {P("b"), 0}}));
  EXPECT_EQ(calls[1].src, P("c"));
  EXPECT_EQ(calls[1].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("d"), 0}}));
  EXPECT_EQ(calls[2].src, P("d"));
  EXPECT_EQ(calls[2].src_offset, 4096u);
  EXPECT_EQ(calls[2].length, 4096u);
  EXPECT_EQ(calls[2].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("c"), 8192}}));
  EXPECT_EQ(stats.rounds, 2u);
  EXPECT_EQ(stats.rounds_done, 2u);
  EXPECT_EQ(stats.ops, 3u);
  EXPECT_EQ(stats.bytes_deduped, 2u * 8192 + 4096 + 4096);
  EXPECT_EQ(stats.files_checked, 5u);
  EXPECT_EQ(stats.files_changed, 0u);
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_FALSE(stats.interrupted);
  // Every source and destination range was read ahead once.
  EXPECT_EQ(stats.bytes_prefetched, 3u * 8192 + 2 * 4096 + 2 * 4096);
}

// The filesystem is measured before the first round and after the last: data freed,
// metadata grown with its copies, and their difference.
TEST_F(ApplyTest, MeasuresTheSpaceFreed) {
  SpaceUse before{true, 100 << 20, 10 << 20, 7}, after{true, (100 << 20) - 8192, (10 << 20) + 4096, 9};
  sys_.space = {before, after};
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), Rounds(1), &stats));
  EXPECT_EQ(sys_.space_asked, 2u);
  EXPECT_TRUE(stats.space_measured);
  EXPECT_TRUE(stats.space_split);
  EXPECT_EQ(stats.data_freed, 8192);
  EXPECT_EQ(stats.metadata_grown, 4096);
  EXPECT_EQ(stats.net_freed(), 4096);
  EXPECT_FALSE(stats.space_approximate);
}

// More data freed than the apply shared, or more written than it rewrote: someone else
// wrote or removed data meanwhile, and the figure says it is approximate.
TEST_F(ApplyTest, OtherWritersMakeTheMeasureApproximate) {
  sys_.space = {{true, 100 << 20, 0, 1}, {true, 50 << 20, 0, 2}};
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), Rounds(1), &stats));
  EXPECT_EQ(stats.data_freed, 50 << 20);
  EXPECT_TRUE(stats.space_approximate);
  sys_.space = {{true, 50 << 20, 0, 1}, {true, 100 << 20, 0, 2}};
  sys_.space_asked = 0;
  ApplyStats grown;
  ASSERT_OK(Apply(Header(1), Rounds(1), &grown, {}, true));
  EXPECT_EQ(grown.data_freed, -(50 << 20));
  EXPECT_TRUE(grown.space_approximate);
}

// A dry run changes nothing and measures nothing; nor is a filesystem that cannot be
// measured reported as freeing nothing.
TEST_F(ApplyTest, DryRunAndUnmeasurableLeaveTheSpaceUnmeasured) {
  sys_.space = {{true, 1, 0, 1}, {true, 1, 0, 1}};
  ApplyOptions o;
  o.dry_run = true;
  o.on_dry_run = [](const std::string&) {};
  ApplyStats dry;
  ASSERT_OK(Apply(Header(1), Rounds(1), &dry, o));
  EXPECT_EQ(sys_.space_asked, 0u);
  EXPECT_FALSE(dry.space_measured);
  sys_.space = {{true, 1, 0, 1}};  // the second measure fails
  ApplyStats half;
  ASSERT_OK(Apply(Header(1), Rounds(1), &half));
  EXPECT_FALSE(half.space_measured);
}

TEST_F(ApplyTest, NoPrefetchReadsNothing) {
  ApplyOptions o;
  o.prefetch = false;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})}, &stats, o));
  EXPECT_EQ(sys_.preads(), 0);
  EXPECT_EQ(stats.bytes_prefetched, 0u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
}

TEST_F(ApplyTest, IdentityMismatchSkipsTheFile) {
  PlanFileRef wrong_ino = Ref(P("a"));
  wrong_ino.ino += 1;
  PlanFileRef wrong_size = Ref(P("b"));
  wrong_size.size += 1;
  PlanFileRef wrong_mtime = Ref(P("c"));
  wrong_mtime.mtime_ns += 1;
  PlanFileRef other_dev = Ref(P("d"));
  other_dev.dev += 1;  // st_dev is not an identity (see DeviceNumberChangedSinceThePlanIsTheSameFile)
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1),
                  {Round(0, {Ref(P("s")), wrong_ino, wrong_size, wrong_mtime, other_dev, Ref(P("e"))},
                         {{0, {1, 2, 3, 4, 5}}})},
                  &stats));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("d"), 0}, {P("e"), 0}}));
  EXPECT_EQ(stats.files_changed, 3u);
  EXPECT_EQ(stats.bytes_deduped, 2u * 8192);
  EXPECT_EQ(stats.skipped["changed since scan (replaced by another file)"], 8192u);
  EXPECT_EQ(stats.skipped["changed since scan (modified)"], 2u * 8192);
  EXPECT_EQ(stats.bytes_skipped(), 3u * 8192);
  EXPECT_EQ(stats.errors, 0u);
}

TEST_F(ApplyTest, ChangedSourceSkipsTheOperation) {
  PlanFileRef src = Ref(P("s"));
  src.mtime_ns -= 1000;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {src, Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}, {1, {2}}})}, &stats));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 1u);  // only a -> b
  EXPECT_EQ(calls[0].src, P("a"));
  EXPECT_EQ(stats.skipped["source changed since scan (modified)"], 2u * 8192);
  EXPECT_EQ(stats.files_changed, 1u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
}

TEST_F(ApplyTest, FileChangedOnDiskSinceThePlan) {
  std::vector<PlanRound> rounds = {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})};
  // Rewritten after planning: same inode, other size.
  test::WriteFile(P("a"), "shorter now");
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), rounds, &stats));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats.files_changed, 1u);
  EXPECT_EQ(stats.skipped["changed since scan (modified)"], 8192u);
  // Replaced by another file under the same name.
  rounds = {Round(0, {Ref(P("s")), Ref(P("b"))}, {{0, {1}}})};
  test::WriteFile(P("b.new"), std::string(16384, 'b'));
  ASSERT_EQ(::rename(P("b.new").c_str(), P("b").c_str()), 0);
  ApplyStats stats2;
  ASSERT_OK(Apply(Header(1), rounds, &stats2));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats2.skipped["changed since scan (replaced by another file)"], 8192u);
  // Gone.
  rounds = {Round(0, {Ref(P("s")), Ref(P("c"))}, {{0, {1}}})};
  ASSERT_EQ(::unlink(P("c").c_str()), 0);
  ApplyStats stats3;
  ASSERT_OK(Apply(Header(1), rounds, &stats3));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats3.files_changed, 1u);
  EXPECT_EQ(stats3.skipped.begin()->first.rfind("ENOENT", 0), 0u) << stats3.skipped.begin()->first;
}

TEST_F(ApplyTest, DiffersCounted) {
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    for (size_t i = 0; i < dests->size(); ++i) {
      bool differs = c.dests[i].first == P("a");
      (*dests)[i].status = differs ? kDedupeDiffers : kDedupeSame;
      (*dests)[i].bytes_deduped = differs ? 0 : c.length;
    }
    return Status::Ok();
  };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}})}, &stats));
  EXPECT_EQ(sys_.calls().size(), 1u);
  EXPECT_EQ(stats.skipped["differs (changed since scan)"], 8192u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
  EXPECT_EQ(stats.errors, 0u);  // a difference is not an error
}

// A rewrite (plan format 2): an operation naming its source range as a destination.
// The range is copied into a file without a name in the file's directory, and that copy
// is the source the range itself and every other destination are compared with.
class RewriteTest : public ApplyTest {
 protected:
  void SetUp() override {
    ApplyTest::SetUp();
    test::WriteFile(P("b"), std::string(16384, 'a'));  // the same as a
    sys_.compare_bytes = true;
  }
  // a's first 8 KiB rewritten, and shared by b.
  Status Run(ApplyStats* stats) { return Apply(Header(1), {Round(0, {Ref(P("a")), Ref(P("b"))}, {{0, {0, 1}}})}, stats); }
  bool Made(const std::string& event) {
    auto e = sys_.events();
    return std::find(e.begin(), e.end(), event) != e.end();
  }
};

TEST_F(RewriteTest, TheRangeIsSharedFromACopyWithoutAName) {
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_TRUE(Made("tmpfile in " + root_));
  EXPECT_TRUE(Made("write tmpfile 0+8192"));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].src, "tmpfile");
  EXPECT_EQ(calls[0].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("a"), 0}, {P("b"), 0}}));
  EXPECT_EQ(stats.bytes_rewritten, 8192u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);  // b's; a's own range is rewritten, not reclaimed
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_EQ(test::ReadFile(P("a")), std::string(16384, 'a'));
}

TEST_F(RewriteTest, ARangeChangedAfterItWasCopiedDiffersAndKeepsItsNewData) {
  // Another writer changes a between the copy and the dedupe.
  sys_.after_pwrite = [&] {
    std::fstream f(P("a"), std::ios::in | std::ios::out | std::ios::binary);
    f.write(std::string(4096, 'X').data(), 4096);
  };
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_EQ(stats.skipped["differs (changed since scan)"], 8192u);
  EXPECT_EQ(stats.bytes_rewritten, 0u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);  // b matches the copy
  EXPECT_EQ(test::ReadFile(P("a")), std::string(4096, 'X') + std::string(12288, 'a'));
}

TEST_F(RewriteTest, TheCopyTakesTheFilesNodatacowFlagWhateverItsDirectoryGives) {
  constexpr uint32_t kNoCow = 0x00800000;  // FS_NOCOW_FL
  // A nodatacow file in a directory without it, then a file with checksums in a
  // directory made nodatacow after it was written (chattr +C): the copy must agree.
  for (bool file_nocow : {true, false}) {
    sys_.ClearRecords();
    sys_.inode_flags.clear();
    if (file_nocow) sys_.inode_flags[P("a")] = kNoCow;
    else sys_.inode_flags["tmpfile"] = kNoCow | 0x10;  // inherited, with another flag kept
    ApplyStats stats;
    ASSERT_OK(Run(&stats));
    EXPECT_TRUE(Made("setflags tmpfile " + std::to_string(file_nocow ? kNoCow : 0x10))) << file_nocow;
    EXPECT_EQ(stats.bytes_rewritten, 8192u) << file_nocow;
  }
}

TEST_F(RewriteTest, NothingMoreIsSharedIntoAFileWhoseRewriteWasNotMade) {
  sys_.shared.insert(P("a"));
  // Round 0 rewrites a's first 8 KiB (not made: shared); round 1 would share s into
  // a's next 8 KiB, which frees nothing without the rewrite.
  std::vector<PlanRound> rounds = {Round(0, {Ref(P("a")), Ref(P("b"))}, {{0, {0, 1}}}),
                                   Round(1, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})};
  rounds[1].ops[0].offset = rounds[1].ops[0].dests[0].offset = 8192;
  test::WriteFile(P("s"), std::string(16384, 'a'));
  rounds[1].files[0] = Ref(P("s"));
  ApplyStats stats;
  ASSERT_OK(Apply(Header(2), rounds, &stats));
  EXPECT_EQ(stats.not_rewritten["not shared: a rewrite in the file was not made"], 8192u);
  for (const auto& c : sys_.calls()) EXPECT_NE(c.src, P("s"));
  EXPECT_EQ(stats.bytes_deduped, 8192u);  // b, in round 0, from a itself
}

TEST_F(RewriteTest, AFileThatShrankOrAWriteThatFailedLeavesNoCopyOpen) {
  // a shrinks to 4 KiB after it was opened and checked: the copy of its first 8 KiB
  // reads 4 KiB, then nothing.
  sys_.on_tmpfile = [&](int dirfd) -> Result<int> {
    EXPECT_EQ(::truncate(P("a").c_str(), 4096), 0);
    return test::ForwardingSys().OpenTmpfile(dirfd);
  };
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_EQ(stats.skipped["differs (changed since scan)"], 8192u);
  EXPECT_EQ(stats.bytes_rewritten, 0u);
  // No space for the copy's data.
  test::WriteFile(P("a"), std::string(16384, 'a'));
  sys_.on_tmpfile = nullptr;
  sys_.ClearRecords();
  sys_.pwrite_error = ENOSPC;
  ApplyStats again;
  ASSERT_OK(Run(&again));  // Apply checks that every descriptor, the copy's too, was closed
  EXPECT_EQ(again.skipped["rewrite failed, ENOSPC (no space for metadata)"], 8192u);
  EXPECT_EQ(again.rounds_to_retry, 1u);
}

TEST_F(RewriteTest, ADryRunSaysWhichDestinationIsARewriteAndMakesNoCopy) {
  std::vector<std::string> lines;
  ApplyOptions o;
  o.dry_run = true;
  o.on_dry_run = [&](const std::string& l) { lines.push_back(l); };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("a")), Ref(P("b"))}, {{0, {0, 1}}})}, &stats, o));
  ASSERT_EQ(lines.size(), 1u);
  const Json j = Json::parse(lines[0]);
  EXPECT_TRUE(j["dests"][0].value("rewrite", false)) << lines[0];
  EXPECT_FALSE(j["dests"][1].contains("rewrite")) << lines[0];
  EXPECT_FALSE(Made("tmpfile in " + root_));
}

TEST_F(RewriteTest, ASymlinkPlantedForTheFilesDirectoryGetsNoCopy) {
  // a lives in sub/; once it is opened and checked, another user swaps sub for a symlink
  // to a directory of theirs: the copy must not be made there.
  test::MakeDir(P("sub"));
  test::MakeDir(parent_.Join("theirs"));
  test::WriteFile(P("sub/a"), std::string(16384, 'a'));
  sys_.on_fiemap = [&] {
    ASSERT_EQ(::rename(P("sub").c_str(), P("sub.moved").c_str()), 0);
    ASSERT_EQ(::symlink(parent_.Join("theirs").c_str(), P("sub").c_str()), 0);
  };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("sub/a")), Ref(P("b"))}, {{0, {0, 1}}})}, &stats));
  for (const auto& e : sys_.events()) EXPECT_EQ(e.rfind("tmpfile", 0), std::string::npos) << e;
  EXPECT_EQ(stats.bytes_rewritten, 0u);
  EXPECT_EQ(stats.errors, 1u);  // the directory could not be opened
  EXPECT_EQ(stats.bytes_deduped, 8192u);  // b, from a itself, still open
}

TEST_F(RewriteTest, ACraftedRangePastTheEndOfTheFileIsNotCopied) {
  PlanRound r = Round(0, {Ref(P("a")), Ref(P("b"))}, {{0, {0}}});
  r.ops[0].offset = r.ops[0].dests[0].offset = 8192;
  r.ops[0].length = uint64_t(1) << 40;  // a is 16 KiB
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {r}, &stats));
  EXPECT_EQ(stats.not_rewritten["not rewritten: the range runs past the end of the file"], uint64_t(1) << 40);
  EXPECT_FALSE(Made("tmpfile in " + root_));
  EXPECT_TRUE(sys_.calls().empty());
}

TEST_F(RewriteTest, HardlinkModeLinksNothingForARewrite) {
  ApplyOptions o;
  o.hardlink = true;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("a"))}, {{0, {0}}})}, &stats, o));
  EXPECT_EQ(stats.not_rewritten["not rewritten: hardlink mode"], 8192u);
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_EQ(stats.files_linked, 0u);
}

TEST_F(RewriteTest, AnExtentSharedWithASnapshotIsNotRewritten) {
  sys_.shared.insert(P("a"));  // its extent stays allocated whatever a references
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_EQ(stats.not_rewritten["not rewritten: shared with another file or a snapshot"], 8192u);
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_FALSE(Made("tmpfile in " + root_));
  EXPECT_EQ(stats.bytes_rewritten, 0u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
}

TEST_F(RewriteTest, NoSpaceForTheCopyIsTriedAgainNextTime) {
  sys_.on_tmpfile = [](int) -> Result<int> { return Status::Io("create a temporary file", ENOSPC); };
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_EQ(stats.skipped["rewrite failed, ENOSPC (no space for metadata)"], 8192u);
  EXPECT_EQ(stats.rounds_to_retry, 1u);
  EXPECT_EQ(stats.errors, 1u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);  // b, from a itself
}

TEST_F(RewriteTest, NoCopyIsMadeInADirectoryOnAnotherFilesystem) {
  sys_.dir_uuid = "another";  // the directory was swapped for a mount of something else
  ApplyStats stats;
  ASSERT_OK(Run(&stats));
  EXPECT_EQ(stats.not_rewritten["not rewritten: its directory is on another filesystem now"], 8192u);
  EXPECT_FALSE(Made("tmpfile in " + root_));
  EXPECT_EQ(stats.bytes_deduped, 8192u);
}

TEST_F(ApplyTest, PerDestinationErrorsCountedByReason) {
  const std::map<std::string, int32_t> result = {{P("a"), -EPERM},  {P("b"), -ETXTBSY}, {P("c"), -EXDEV},
                                                 {P("d"), -EINVAL}, {P("e"), -EAGAIN},  {P("f"), kDedupeSame}};
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    for (size_t i = 0; i < dests->size(); ++i) {
      auto it = result.find(c.dests[i].first);
      (*dests)[i].status = it == result.end() ? kDedupeSame : it->second;
      (*dests)[i].bytes_deduped = (*dests)[i].status == kDedupeSame ? c.length : 0;
    }
    return Status::Ok();
  };
  std::vector<PlanFileRef> files = {Ref(P("s"))};
  for (const char* n : {"a", "b", "c", "d", "e", "f"}) files.push_back(Ref(P(n)));
  ApplyStats stats;
  ASSERT_OK(Apply(Header(2),
                  {Round(0, files, {{0, {1, 2, 3, 4, 5, 6}}, {6, {0}}}),
                   Round(1, {Ref(P("a")), Ref(P("s"))}, {{1, {0}}}, 4096)},
                  &stats));
  EXPECT_EQ(sys_.calls().size(), 3u);  // the run went on after the failures
  EXPECT_EQ(stats.errors, 6u);          // five in round 0, a again in round 1
  std::map<std::string, uint64_t> by_errno;
  for (const auto& [reason, bytes] : stats.skipped) by_errno[reason.substr(0, reason.find(' '))] += bytes;
  EXPECT_EQ(by_errno, (std::map<std::string, uint64_t>{
                          {"EPERM", 8192 + 4096}, {"ETXTBSY", 8192}, {"EXDEV", 8192}, {"EINVAL", 8192}, {"EAGAIN", 8192}}));
  EXPECT_EQ(stats.bytes_deduped, 8192u + 8192u);  // f, and s <- f
  EXPECT_EQ(stats.rounds_done, 2u);
}

TEST_F(ApplyTest, SameWithoutProgressDoesNotLoop) {
  sys_.on_dedupe = [&](const Call&, std::vector<DedupeDest>* dests) {
    for (auto& d : *dests) {
      d.status = kDedupeSame;
      d.bytes_deduped = 0;
    }
    return Status::Ok();
  };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}})}, &stats));
  EXPECT_EQ(sys_.calls().size(), 1u);
  EXPECT_EQ(stats.skipped["no progress"], 2u * 8192);
  EXPECT_EQ(stats.bytes_deduped, 0u);
}

TEST_F(ApplyTest, PartialProgressContinues) {
  // The first call dedupes half for a and all for b; a is continued alone from there.
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    for (size_t i = 0; i < dests->size(); ++i) {
      (*dests)[i].status = kDedupeSame;
      bool half = c.dests[i].first == P("a") && c.src_offset == 0;
      (*dests)[i].bytes_deduped = half ? c.length / 2 : c.length;
    }
    return Status::Ok();
  };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}}, 16384)}, &stats));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].src, P("s"));
  EXPECT_EQ(calls[1].src_offset, 8192u);
  EXPECT_EQ(calls[1].length, 8192u);
  EXPECT_EQ(calls[1].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("a"), 8192}}));
  EXPECT_EQ(stats.bytes_deduped, 2u * 16384);
  EXPECT_TRUE(stats.skipped.empty());
}

TEST_F(ApplyTest, WholeCallErrorCountsEveryDestination) {
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    if (c.src == P("s")) return Status::Io("FIDEDUPERANGE", EINVAL);
    for (auto& d : *dests) {
      d.status = kDedupeSame;
      d.bytes_deduped = c.length;
    }
    return Status::Ok();
  };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b")), Ref(P("c"))}, {{0, {1, 2}}, {3, {1}}})},
                  &stats));
  EXPECT_EQ(sys_.calls().size(), 2u);
  ASSERT_EQ(stats.skipped.size(), 1u);
  EXPECT_EQ(stats.skipped.begin()->first.rfind("EINVAL", 0), 0u);
  EXPECT_EQ(stats.skipped.begin()->second, 2u * 8192);
  EXPECT_EQ(stats.errors, 2u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
}

TEST_F(ApplyTest, StopFlagEndsAfterTheCurrentRound) {
  std::atomic<bool> stop{false};
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    // A signal arrives during round 0, once round 1 is being prepared (its first file opened).
    for (int i = 0; i < 2000 && !sys_.Opened(P("b")); ++i) usleep(1000);
    stop.store(true);
    for (auto& d : *dests) {
      d.status = kDedupeSame;
      d.bytes_deduped = c.length;
    }
    return Status::Ok();
  };
  ApplyOptions o;
  o.stop = &stop;
  ApplyStats stats;
  Status s = Apply(Header(3),
                   {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}, {1, {0}}}), Round(1, {Ref(P("b")), Ref(P("c"))}, {{0, {1}}}),
                    Round(2, {Ref(P("d")), Ref(P("e"))}, {{0, {1}}})},
                   &stats, o);
  EXPECT_TRUE(StatusIs(s, Status::Code::kInterrupted));
  EXPECT_TRUE(stats.interrupted);
  EXPECT_EQ(stats.rounds_done, 1u);
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 2u);  // round 0 finished, nothing after it
  EXPECT_EQ(calls[0].src, P("s"));
  EXPECT_EQ(calls[1].src, P("a"));
}

TEST_F(ApplyTest, StopFlagSetBeforeStart) {
  std::atomic<bool> stop{true};
  ApplyOptions o;
  o.stop = &stop;
  ApplyStats stats;
  Status s = Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})}, &stats, o);
  EXPECT_TRUE(StatusIs(s, Status::Code::kInterrupted));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats.rounds_done, 0u);
}

TEST_F(ApplyTest, DryRunChangesNothing) {
  PlanFileRef stale = Ref(P("b"));
  stale.size = 1;
  std::vector<std::string> lines;
  ApplyOptions o;
  o.dry_run = true;
  o.on_dry_run = [&](const std::string& l) { lines.push_back(l); };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(2),
                  {Round(0, {Ref(P("s")), Ref(P("a")), stale}, {{0, {1, 2}}, {0, {2}}}),
                   Round(1, {Ref(P("c")), PlanFileRef{P("missing\n\xFF"), 0, 1, 2, 3, 4, 1, {}}}, {{0, {1}}})},
                  &stats, o));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(sys_.preads(), 0);
  EXPECT_EQ(stats.bytes_deduped, 0u);
  EXPECT_EQ(stats.rounds_done, 2u);
  // Op 2 of round 0 has only the stale destination; the missing file of round 1 too.
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("\"source\":\"" + P("s") + "\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"path\":\"" + P("a") + "\""), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find(P("b")), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"length\":8192"), std::string::npos) << lines[0];
  EXPECT_EQ(stats.files_changed, 2u);
}

TEST_F(ApplyTest, DryRunLineIsValidJsonText) {
  test::WriteFile(P("q\"uote\n"), std::string(16384, 'q'));
  std::vector<std::string> lines;
  ApplyOptions o;
  o.dry_run = true;
  o.on_dry_run = [&](const std::string& l) { lines.push_back(l); };
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("q\"uote\n"))}, {{0, {1}}})}, &stats, o));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
  EXPECT_NE(lines[0].find("q\\\"uote\\n"), std::string::npos) << lines[0];
}

TEST_F(ApplyTest, PathsOutsideTheRootsRefused) {
  // A sibling directory whose name starts with the root's name.
  test::MakeDir(root_ + "evil");
  test::WriteFile(root_ + "evil/x", std::string(16384, 'x'));
  test::MakeDir(P("sub"));
  std::vector<PlanFileRef> files = {Ref(P("s")), Ref(root_ + "evil/x"), Ref(P("a"))};
  files.push_back(Ref(P("b")));
  files.back().path = P("sub/../b");
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, files, {{0, {1, 2, 3}}})}, &stats));
  auto calls = sys_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].dests, (std::vector<std::pair<std::string, uint64_t>>{{P("a"), 0}}));
  EXPECT_EQ(stats.skipped["outside the plan's roots"], 2u * 8192);
  EXPECT_EQ(stats.files_changed, 2u);
  EXPECT_FALSE(sys_.Opened(root_ + "evil/x"));  // refused before opening
  EXPECT_FALSE(sys_.Opened(P("sub/../b")));
}

TEST_F(ApplyTest, SymlinkInPathRefused) {
  test::MakeDir(P("real"));
  test::WriteFile(P("real/f"), std::string(16384, 'f'));
  ASSERT_EQ(::symlink("real", P("link").c_str()), 0);
  PlanFileRef via = Ref(P("real/f"));
  via.path = P("link/f");
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), via}, {{0, {1}}})}, &stats));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats.files_changed, 1u);
  ASSERT_EQ(stats.skipped.size(), 1u);
  EXPECT_EQ(stats.skipped.begin()->first.rfind("ELOOP", 0), 0u) << stats.skipped.begin()->first;
}

TEST_F(ApplyTest, PlanForAnotherFilesystemRefused) {
  sys_.uuid = "SOMETHING-ELSE";
  ApplyStats stats;
  Status s = Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})}, &stats);
  EXPECT_TRUE(StatusIs(s, Status::Code::kMismatch, "another filesystem"));
  EXPECT_TRUE(StatusIs(s, Status::Code::kMismatch, root_));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats.rounds_done, 0u);
  EXPECT_TRUE(StatusIs(CheckPlanFilesystems(sys_, Header(1)), Status::Code::kMismatch));
  sys_.uuid = kUuid;
  EXPECT_OK(CheckPlanFilesystems(sys_, Header(1)));
}

TEST_F(ApplyTest, FileOnAnotherSubvolumeRefused) {
  sys_.subvolume = 6;  // the same filesystem, but not the subvolume the plan names
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})}, &stats));
  EXPECT_TRUE(sys_.calls().empty());
  EXPECT_EQ(stats.files_changed, 2u);
  EXPECT_EQ(stats.skipped["source on another filesystem than the plan names"], 8192u);
}

TEST_F(ApplyTest, TruncatedPlanIsAnErrorAfterTheRoundsItHolds) {
  ApplyStats stats;
  Status s = Apply(Header(3),
                   {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}}), Round(1, {Ref(P("b")), Ref(P("c"))}, {{0, {1}}})},
                   &stats, {}, /*finish=*/false);
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "truncated"));
  EXPECT_EQ(stats.rounds_done, 2u);
  EXPECT_EQ(sys_.calls().size(), 2u);
  EXPECT_FALSE(stats.interrupted);
}

TEST_F(ApplyTest, PhysicalOrderRunsRoundsAsPlanned) {
  ApplyStats stats;
  ASSERT_OK(Apply(Header(12), Rounds(12), &stats));
  EXPECT_EQ(RoundsRun(), Iota(12));
}

TEST_F(ApplyTest, PrefetchReadOrder) {
  // One round, six ranges, each read with one pread; physical offsets out of plan order.
  PlanRound r = Round(0, {Ref(P("s")), Ref(P("a")), Ref(P("b")), Ref(P("c")), Ref(P("d")), Ref(P("e"))},
                      {{0, {1, 2}}, {3, {4, 5}}});
  r.ops[0].physical = 500;
  r.ops[0].dests[0].physical = 100;
  r.ops[0].dests[1].physical = 900;
  r.ops[1].physical = 300;
  r.ops[1].dests[0].physical = 700;
  r.ops[1].dests[1].physical = 50;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {r}, &stats));
  using Reads = std::vector<std::pair<std::string, uint64_t>>;
  const Reads physical = {{P("e"), 0}, {P("a"), 0}, {P("c"), 0}, {P("s"), 0}, {P("d"), 0}, {P("b"), 0}};
  EXPECT_EQ(sys_.reads(), physical);
  EXPECT_EQ(sys_.hints(), physical) << "the whole round is requested at once, in disk order";
}

// Each round is read from where the round before left the head, wrapping once: sources
// and destinations in two parts of the disk cost one long seek per round, not two.
TEST_F(ApplyTest, PrefetchStartsWhereTheRoundBeforeEnded) {
  std::vector<PlanRound> rounds = Rounds(3);
  for (uint64_t i = 0; i < 3; ++i) {
    rounds[i].ops[0].physical = 1000000 + i * 100000;            // the sources: copy0's part
    rounds[i].ops[0].dests[0].physical = 9000000 + i * 100000;   // the destinations, far above
  }
  ApplyStats stats;
  ASSERT_OK(Apply(Header(3), rounds, &stats));
  using Reads = std::vector<std::pair<std::string, uint64_t>>;
  const Reads want = {{P("r0.a"), 0}, {P("r0.b"), 0}, {P("r1.b"), 0},
                      {P("r1.a"), 0}, {P("r2.a"), 0}, {P("r2.b"), 0}};
  EXPECT_EQ(sys_.reads(), want);
  EXPECT_EQ(sys_.hints(), want);
}

// On a spinning disk a round's files are opened after the round before is read (their
// metadata reads would come between its data reads); on an SSD while it is read.
TEST_F(ApplyTest, OnASpinningDiskTheNextRoundIsOpenedAfterTheReads) {
  sys_.read_delay_ms = 20;
  auto last_read_before_open = [&](int i) {
    const auto seq = sys_.sequence();
    const std::string next = "open " + P("r" + std::to_string(i + 1) + ".a");
    const auto open = std::find(seq.begin(), seq.end(), next);
    EXPECT_NE(open, seq.end()) << next;
    const std::string read = "read " + P("r" + std::to_string(i) + ".b");
    return std::find(open, seq.end(), read) == seq.end();  // no read of round i after round i+1's open
  };
  for (StorageChoice storage : {StorageChoice::kHdd, StorageChoice::kSsd}) {
    sys_.ClearRecords();
    ApplyOptions o;
    o.storage = storage;
    ApplyStats stats;
    ASSERT_OK(Apply(Header(3), Rounds(3), &stats, o));
    EXPECT_EQ(stats.rounds_done, 3u);
    EXPECT_EQ(stats.open_ahead, storage == StorageChoice::kSsd);
    for (int i : {0, 1}) EXPECT_EQ(last_read_before_open(i), storage == StorageChoice::kHdd) << i;
  }
}

// Without --storage, apply follows the storage the plan recorded, not the test machine's.
TEST_F(ApplyTest, TheStorageThePlanRecordedIsUsed) {
  for (StorageKind kind : {StorageKind::kHdd, StorageKind::kSsd}) {
    PlanHeader h = Header(3);
    h.storage = kind;
    ApplyStats stats;
    ASSERT_OK(Apply(h, Rounds(3), &stats));
    EXPECT_EQ(stats.open_ahead, kind == StorageKind::kSsd);
    // --storage overrides it.
    ApplyOptions o;
    o.storage = kind == StorageKind::kHdd ? StorageChoice::kSsd : StorageChoice::kHdd;
    ApplyStats told;
    ASSERT_OK(Apply(h, Rounds(3), &told, o));
    EXPECT_EQ(told.open_ahead, kind == StorageKind::kHdd);
  }
}

// On a spinning disk the filesystem is committed between rounds, once enough was deduped:
// between one round's reads and the next's, never among a round's reads; not on an SSD,
// nor with commit_every 0.
TEST_F(ApplyTest, OnASpinningDiskDedupesAreCommittedBetweenRounds) {
  sys_.read_delay_ms = 5;
  for (StorageChoice storage : {StorageChoice::kHdd, StorageChoice::kSsd}) {
    for (uint64_t every : {uint64_t(8192), uint64_t(0)}) {
      sys_.ClearRecords();
      ApplyOptions o;
      o.storage = storage;
      o.commit_every = every;
      ApplyStats stats;
      ASSERT_OK(Apply(Header(4), Rounds(4), &stats, o));
      EXPECT_EQ(stats.rounds_done, 4u);
      // The round of each read and commit ("r2" for a file of round 2), and which it was.
      std::vector<std::pair<std::string, bool>> seq;
      for (const auto& e : sys_.sequence()) {
        const bool commit = e.rfind("syncfs ", 0) == 0;
        if (commit || e.rfind("read ", 0) == 0) seq.push_back({e.substr(e.rfind('/') + 1, 2), commit});
      }
      const size_t commits = std::count_if(seq.begin(), seq.end(), [](const auto& x) { return x.second; });
      EXPECT_EQ(stats.commits, commits);
      if (storage == StorageChoice::kSsd || every == 0) {
        EXPECT_EQ(commits, 0u);
        continue;
      }
      // Every round dedupes 8 KiB, and round 2 is not read before round 0 was deduped
      // (two rounds in flight at most): so round 2 is committed before, at least.
      EXPECT_GE(commits, 1u);
      for (size_t i = 0; i < seq.size(); ++i)
        if (seq[i].second) {
          // Through a file of the round read next, after the round before was read.
          ASSERT_GT(i, 0u);
          ASSERT_LT(i + 1, seq.size()) << "a commit after the last round's reads";
          EXPECT_FALSE(seq[i + 1].second);
          EXPECT_EQ(seq[i + 1].first, seq[i].first) << "committed through a file of another round";
          EXPECT_NE(seq[i - 1].first, seq[i].first) << "a commit among the reads of round " << seq[i].first;
        }
    }
  }
}

// A finished round's ranges leave the page cache, after its dedupe: otherwise, under a
// memory limit, the sources the compare just used push the next round's prefetched pages
// out before they are compared, and the compare reads them again from the disk.
TEST_F(ApplyTest, FinishedRoundsLeaveThePageCache) {
  std::vector<PlanRound> rounds = Rounds(3);
  rounds[1] = Round(1, {Ref(P("s")), Ref(P("a")), Ref(P("b"))}, {{0, {1, 2}}}, 4096);
  rounds[1].ops[0].offset = 8192;
  rounds[1].ops[0].dests[1].offset = 4096;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(3), rounds, &stats));
  const auto ev = sys_.events();
  auto at = [&](const std::string& e) {
    auto it = std::find(ev.begin(), ev.end(), e);
    EXPECT_NE(it, ev.end()) << e << " missing";
    EXPECT_EQ(std::count(ev.begin(), ev.end(), e), 1) << e << " more than once";
    return it - ev.begin();
  };
  for (int i : {0, 2}) {
    const std::string a = P("r" + std::to_string(i) + ".a"), b = P("r" + std::to_string(i) + ".b");
    const auto done = at("dedupe " + a);
    EXPECT_GT(at("drop " + a + " 0+8192"), done);
    EXPECT_GT(at("drop " + b + " 0+8192"), done);
  }
  const auto done = at("dedupe " + P("s"));
  EXPECT_GT(at("drop " + P("s") + " 8192+4096"), done);
  EXPECT_GT(at("drop " + P("a") + " 0+4096"), done);
  EXPECT_GT(at("drop " + P("b") + " 4096+4096"), done);
  EXPECT_EQ(ev.size(), 3u + 7u) << "three calls, seven ranges";

  // Without prefetch (nothing was read ahead) and in a dry run, nothing is dropped.
  for (bool dry : {false, true}) {
    sys_.ClearRecords();
    ApplyOptions o;
    o.prefetch = dry;
    o.dry_run = dry;
    ApplyStats s;
    ASSERT_OK(Apply(Header(3), Rounds(3), &s, o));
    for (const auto& e : sys_.events()) EXPECT_EQ(e.rfind("drop ", 0), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// After a remount (or a reboot) a btrfs subvolume's st_dev is another number: files are
// known by filesystem UUID, subvolume and inode, so a plan made before still applies.
TEST_F(ApplyTest, DeviceNumberChangedSinceThePlanIsTheSameFile) {
  PlanFileRef s = Ref(P("s")), a = Ref(P("a"));
  s.dev += 17;
  a.dev += 17;
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {s, a}, {{0, {1}}})}, &stats));
  EXPECT_EQ(stats.files_changed, 0u);
  EXPECT_EQ(stats.bytes_deduped, 8192u);
  // Another inode under the same name is still refused.
  PlanFileRef other = Ref(P("b"));
  other.path = P("a");
  ApplyStats again;
  ASSERT_OK(Apply(Header(1), {Round(0, {s, other}, {{0, {1}}})}, &again));
  EXPECT_EQ(again.files_changed, 1u);
  EXPECT_EQ(again.bytes_deduped, 0u);
}

// A round in which something failed in a way that may not happen again (busy, out of
// space, an I/O error) is not journaled as done: the next run tries it again. Permanent
// outcomes (differs, not permitted) are.
TEST_F(ApplyTest, OnlyRoundsThatCannotSucceedOnARetryAreJournaled) {
  const auto rounds = Rounds(3);
  const std::string jpath = parent_.Join("p.plan.journal");
  sys_.on_dedupe = [&](const Call& c, std::vector<DedupeDest>* dests) {
    for (auto& d : *dests) {
      d.status = kDedupeSame;
      d.bytes_deduped = c.length;
    }
    if (c.src == P("r0.a")) (*dests)[0].status = -EAGAIN;    // btrfs send running
    if (c.src == P("r1.a")) (*dests)[0].status = -EPERM;     // immutable: stays so
    if (c.src == P("r2.a")) return Status::Io("FIDEDUPERANGE", ENOSPC);
    return Status::Ok();
  };
  std::string notice;
  {
    auto j = Journal::Open(jpath, Header(3), &notice);
    ASSERT_OK(j.status());
    ApplyOptions o;
    o.journal = j->get();
    ApplyStats stats;
    ASSERT_OK(Apply(Header(3), rounds, &stats, o));
    EXPECT_EQ(stats.rounds_to_retry, 2u);
    EXPECT_EQ(stats.rounds_done, 3u);
  }
  auto j = Journal::Open(jpath, Header(3), &notice);
  ASSERT_OK(j.status());
  EXPECT_FALSE((*j)->Done(0));
  EXPECT_TRUE((*j)->Done(1));
  EXPECT_FALSE((*j)->Done(2));
  // The next run, with the trouble gone, does the two rounds left.
  sys_.on_dedupe = nullptr;
  sys_.ClearRecords();
  ApplyOptions o;
  o.journal = j->get();
  ApplyStats stats;
  ASSERT_OK(Apply(Header(3), rounds, &stats, o));
  EXPECT_EQ(stats.rounds_from_journal, 1u);
  EXPECT_EQ(stats.bytes_deduped, 2u * 8192);
  EXPECT_EQ(stats.rounds_to_retry, 0u);
}

// A hidden hardlink name that a killed run left is removed by the next run of any plan
// that uses the same journal.
TEST_F(ApplyTest, HiddenLinksOfAKilledRunAreRemovedByTheNextRun) {
  const std::string jpath = parent_.Join("p.plan.journal");
  const std::string tmp = ".a.oans-link-00000000000000ff";
  ASSERT_EQ(::link(P("s").c_str(), P(tmp).c_str()), 0);
  std::string notice;
  {
    PlanHeader old = Header(1);
    old.created_ns = 42;  // another plan's journal
    auto j = Journal::Open(jpath, old, &notice);
    ASSERT_OK(j.status());
    LinkIntent in;
    in.dir = root_;
    in.tmp = tmp;
    in.src_ino = test::StatPath(P("s")).ino;
    in.dst_ino = test::StatPath(P("a")).ino;
    ASSERT_OK((*j)->Begin(in));
  }
  auto j = Journal::Open(jpath, Header(1), &notice);
  ASSERT_OK(j.status());
  ApplyOptions o;
  o.journal = j->get();
  ApplyStats stats;
  ASSERT_OK(Apply(Header(1), {Round(0, {Ref(P("s")), Ref(P("a"))}, {{0, {1}}})}, &stats, o));
  EXPECT_FALSE(test::Exists(P(tmp)));
  EXPECT_EQ(test::StatPath(P("s")).nlink, 1u);
  EXPECT_TRUE((*j)->Pending().empty());
}

// A record glued to the one before it (a write cut short, then another appended) is not
// taken for an intent: its fields would be read from the wrong places.
TEST_F(ApplyTest, AGluedJournalRecordIsNoIntent) {
  const std::string jpath = parent_.Join("p.plan.journal");
  std::string notice;
  LinkIntent in;
  in.dir = root_;
  in.tmp = ".a.oans-link-00000000000000ff";
  in.src_ino = 7;
  {
    auto j = Journal::Open(jpath, Header(1), &notice);
    ASSERT_OK(j.status());
    ASSERT_OK((*j)->Begin(in));
  }
  std::string text = test::ReadFile(jpath);
  ASSERT_EQ(text.back(), '\n');
  text.pop_back();  // the record cut before its end, another appended to it
  text += "1link-begin 2d 2d 1 2 3 4 5\n";
  test::WriteFile(jpath, text);
  auto j = Journal::Open(jpath, Header(1), &notice);
  ASSERT_OK(j.status());
  EXPECT_TRUE((*j)->Pending().empty());
}

}  // namespace
}  // namespace oans
