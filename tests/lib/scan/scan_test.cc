#include "lib/scan/scan.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <zstd.h>

#include "lib/scan/hasher.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

class Notices : public Observer {
 public:
  void Notice(const std::string& s) override { lines.push_back(s); }
  bool Has(const std::string& part) const {
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
  std::vector<std::string> lines;
};

constexpr uint32_t kBlock = 64 * 1024;

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_["a"] = test::RandomBytes(100000, 1);
    contents_["b"] = contents_["a"];
    contents_["c"] = test::RandomBytes(300000, 2);
    contents_["sub/d"] = "small";
    test::MakeDir(P("sub"));
    for (const auto& [rel, data] : contents_) test::WriteFile(P(rel), data);
    ASSERT_EQ(::link(P("c").c_str(), P("h").c_str()), 0);
    test::WriteFile(P("empty"), "");
    ASSERT_EQ(::symlink("a", P("link").c_str()), 0);
  }
  std::string P(const std::string& rel) const { return dir_.Join(rel); }

  // Waits until every file's ctime lies more than kRacyNs in the past: a scan begun then
  // records them settled, and the next scan may reuse their records
  // (lib/format/index_file.h). Files changed in the last second are read again.
  void Settle() {
    int64_t newest = 0;
    for (const char* rel : {"a", "b", "c", "sub/d", "h", "empty"}) newest = std::max(newest, test::StatPath(P(rel)).ctime_ns);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t wait = newest + kRacyNs + 10'000'000 - (int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec);
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
  }

  ScanOptions Options() const {
    ScanOptions o;
    o.roots = {dir_.path()};
    o.block_size = kBlock;
    o.storage = StorageChoice::kSsd;
    o.io_threads = 2;
    return o;
  }

  // Runs a scan into `index` (committed on success or interruption).
  Status Scan(Sys& sys, const ScanOptions& o, const std::string& index, ScanStats* stats,
              Observer* observer = nullptr) {
    auto out = OutputFile::Open(index);
    if (!out.ok()) return out.status();
    Status s = RunScan(sys, o, out->get(), observer, stats);
    if (s.ok() || s.code() == Status::Code::kInterrupted) {
      Status c = (*out)->Commit();
      if (!c.ok()) return c;
    }
    return s;
  }

  std::map<std::string, FileEntry> ReadByPath(const std::string& index, bool allow_truncated = false) {
    IndexReadOptions ro;
    ro.allow_truncated = allow_truncated;
    auto c = ReadIndexFile(index, ro);
    EXPECT_TRUE(c.ok()) << c.status().message();
    std::map<std::string, FileEntry> m;
    if (!c.ok()) return m;
    header_ = c->header;
    for (auto& f : c->files) {
      EXPECT_FALSE(m.count(f.path)) << "two records for " << f.path;
      m[f.path] = f;
    }
    return m;
  }

  void ExpectHashedLike(const FileEntry& e, const std::string& data) {
    EXPECT_TRUE(e.hashed) << e.path << ": " << e.error;
    EXPECT_TRUE(e.error.empty()) << e.error;
    EXPECT_EQ(e.size, data.size());
    EXPECT_EQ(e.hash, HashBytes(data.data(), data.size())) << e.path;
    ASSERT_EQ(e.block_hashes.size(), (data.size() + kBlock - 1) / kBlock) << e.path;
    for (size_t b = 0; b < e.block_hashes.size(); ++b)
      EXPECT_EQ(e.block_hashes[b],
                HashBytes(data.data() + b * kBlock, std::min<size_t>(kBlock, data.size() - b * kBlock)));
  }

  TempDir dir_;
  TempDir out_dir_;
  std::map<std::string, std::string> contents_;
  IndexHeader header_;
};

TEST_F(ScanTest, IndexesEveryFileOnce) {
  ScanStats stats;
  const std::string index = out_dir_.Join("1.idx");
  ScanOptions o = Options();
  o.command_line = {"oans-scan", "test"};
  ASSERT_OK(Scan(DefaultSys(), o, index, &stats));
  EXPECT_EQ(stats.files, 4u);
  EXPECT_EQ(stats.hashed, 4u);
  EXPECT_EQ(stats.reused, 0u);
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_EQ(stats.hardlinks, 1u);
  EXPECT_EQ(stats.skipped_small, 1u);
  EXPECT_EQ(stats.skipped_symlinks, 1u);
  EXPECT_EQ(stats.dirs, 2u);
  EXPECT_EQ(stats.bytes, 100000u * 2 + 300000 + 5);
  EXPECT_EQ(stats.bytes_read, stats.bytes);
  EXPECT_FALSE(stats.interrupted);
  EXPECT_EQ(stats.storage.kind, StorageKind::kSsd);

  auto files = ReadByPath(index);
  EXPECT_FALSE(header_.spinning);
  EXPECT_EQ(header_.roots, std::vector<std::string>{dir_.path()});
  EXPECT_EQ(header_.block_size, kBlock);
  EXPECT_EQ(header_.command_line, o.command_line);
  ASSERT_EQ(header_.filesystems.size(), 1u);
  EXPECT_FALSE(header_.filesystems[0].uuid.empty());
  EXPECT_EQ(header_.filesystems[0].dev, test::StatPath(P("a")).dev);
  std::set<std::string> names;
  for (const auto& [p, e] : files) names.insert(p);
  EXPECT_EQ(names, (std::set<std::string>{P("a"), P("b"), P("c"), P("sub/d")}));
  for (const auto& [rel, data] : contents_) {
    SCOPED_TRACE(rel);
    const FileEntry& e = files[P(rel)];
    ExpectHashedLike(e, data);
    FileStat st = test::StatPath(P(rel));
    EXPECT_EQ(e.ino, st.ino);
    EXPECT_EQ(e.dev, st.dev);
    EXPECT_EQ(e.mtime_ns, st.mtime_ns);
    EXPECT_EQ(e.fs, 0u);
    EXPECT_FALSE(e.reused);
    const std::string& type = header_.filesystems[0].type;
    if (type == "ext4" || type == "xfs" || type == "btrfs") {
      // FIEMAP works there: the extents cover the file.
      uint64_t covered = 0;
      for (const auto& x : e.extents) covered += x.length;
      EXPECT_GE(covered, e.size);
    }
  }
  // Hardlinks: one record, the other name alongside.
  EXPECT_EQ(files[P("c")].other_paths, std::vector<std::string>{P("h")});
  EXPECT_EQ(files[P("c")].nlink, 2u);
  EXPECT_TRUE(files[P("a")].other_paths.empty());
  EXPECT_EQ(files[P("a")].hash, files[P("b")].hash);
}

// Whole files only, without btrfs checksums (--read-data): files of a unique size are
// recorded unread, and the two of one size mapped, not read (paired by size), in walk
// order and in disk order alike.
TEST_F(ScanTest, WholeFilesOnlyLeavesUniqueSizesUnread) {
  for (StorageChoice storage : {StorageChoice::kSsd, StorageChoice::kHdd}) {
    ScanOptions o = Options();
    o.storage = storage;
    o.read_data = true;
    o.whole_files_only = true;
    ScanStats stats;
    const std::string index = out_dir_.Join(storage == StorageChoice::kHdd ? "hdd.idx" : "ssd.idx");
    ASSERT_OK(Scan(DefaultSys(), o, index, &stats));
    EXPECT_EQ(stats.files, 4u);
    EXPECT_EQ(stats.unread, 2u);
    EXPECT_EQ(stats.size_paired, 2u);
    EXPECT_EQ(stats.hashed, 0u);
    EXPECT_EQ(stats.bytes_read, 0u);
    auto files = ReadByPath(index);
    for (const char* rel : {"a", "b"}) {
      const FileEntry& e = files[P(rel)];
      EXPECT_TRUE(e.size_paired) << rel;
      EXPECT_FALSE(e.hashed) << rel;
      EXPECT_TRUE(e.error.empty()) << rel;
      EXPECT_FALSE(e.extents.empty()) << rel;  // mapped, for the plan's disk order
      EXPECT_EQ(e.size, contents_[rel].size()) << rel;
    }
    for (const char* rel : {"c", "sub/d"}) {
      const FileEntry& e = files[P(rel)];
      EXPECT_FALSE(e.hashed) << rel;
      EXPECT_TRUE(e.error.empty()) << rel;
      EXPECT_TRUE(e.extents.empty()) << rel;
      EXPECT_EQ(e.size, contents_[rel].size()) << rel;
    }
    EXPECT_EQ(files[P("c")].other_paths, std::vector<std::string>{P("h")});
  }
}

// A file of a pair swapped after the walk, for a symlink to a file outside the tree or
// for another file, is not mapped through it: the open does not follow the link, the
// identity is checked on the open descriptor, and the record says what happened.
TEST_F(ScanTest, APairSwappedAfterTheWalkIsNotMappedThroughTheSwap) {
  class SwapSys : public test::ForwardingSys {
   public:
    std::string path;
    std::function<void()> swap;
    Result<int> OpenNoFollow(const std::string& p) override {
      if (p == path && swap) std::exchange(swap, nullptr)();
      return ForwardingSys::OpenNoFollow(p);
    }
  };
  const std::string secret = out_dir_.Join("secret");
  test::WriteFile(secret, test::RandomBytes(100000, 9));
  for (bool to_symlink : {true, false}) {
    SwapSys sys;
    sys.path = P("a");
    sys.swap = [&] {  // made beside it, then renamed over it: another inode
      if (to_symlink) ASSERT_EQ(::symlink(secret.c_str(), P("a.new").c_str()), 0);
      else test::WriteFile(P("a.new"), test::RandomBytes(100000, 9));
      ASSERT_EQ(::rename(P("a.new").c_str(), P("a").c_str()), 0);
    };
    ScanOptions o = Options();
    o.read_data = true;
    o.whole_files_only = true;
    ScanStats stats;
    const std::string index = out_dir_.Join("swap.idx");
    ASSERT_OK(Scan(sys, o, index, &stats));
    auto files = ReadByPath(index);
    const FileEntry& a = files[P("a")];
    EXPECT_FALSE(a.size_paired) << to_symlink;
    EXPECT_FALSE(a.error.empty()) << to_symlink;
    EXPECT_TRUE(a.extents.empty()) << to_symlink;  // nothing of the secret's or the new file's
    EXPECT_EQ(stats.size_paired, 1u) << to_symlink;  // b alone
    ASSERT_EQ(::unlink(P("a").c_str()), 0);
    test::WriteFile(P("a"), contents_["a"]);
  }
}

// Whole files only with --pair-by-size=never: the unique sizes stay unread, the two
// files of one size are read.
TEST_F(ScanTest, WholeFilesOnlyWithoutPairsReadsThePair) {
  ScanOptions o = Options();
  o.read_data = true;
  o.whole_files_only = true;
  o.pair_by_size = PairBySize::kNever;
  ScanStats stats;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("never.idx"), &stats));
  EXPECT_EQ(stats.unread, 2u);
  EXPECT_EQ(stats.size_paired, 0u);
  EXPECT_EQ(stats.hashed, 2u);
  auto files = ReadByPath(out_dir_.Join("never.idx"));
  ExpectHashedLike(files[P("a")], contents_["a"]);
  ExpectHashedLike(files[P("b")], contents_["b"]);
}

// Outside whole files only, where no btrfs checksums key them, two new files of one size
// are mapped, not read, with --pair-by-size=always alone (on either storage); the unique
// sizes are still read.
TEST_F(ScanTest, PairsBySizeOutsideWholeFilesOnlyWhenAsked) {
  struct Case {
    StorageChoice storage;
    PairBySize pair;
    uint64_t paired;
  };
  for (const Case& k : {Case{StorageChoice::kHdd, PairBySize::kAuto, 0}, Case{StorageChoice::kSsd, PairBySize::kAuto, 0},
                        Case{StorageChoice::kHdd, PairBySize::kAlways, 2},
                        Case{StorageChoice::kSsd, PairBySize::kAlways, 2}}) {
    ScanOptions o = Options();
    o.storage = k.storage;
    o.pair_by_size = k.pair;
    o.read_data = true;
    ScanStats stats;
    const std::string index = out_dir_.Join("pairs.idx");
    ASSERT_OK(Scan(DefaultSys(), o, index, &stats));
    EXPECT_EQ(stats.size_paired, k.paired) << int(k.storage) << int(k.pair);
    EXPECT_EQ(stats.unread, 0u);
    EXPECT_EQ(stats.bytes_read, k.paired ? 300005u : 500005u) << int(k.storage) << int(k.pair);
    auto files = ReadByPath(index);
    ExpectHashedLike(files[P("c")], contents_["c"]);
    EXPECT_EQ(files[P("a")].size_paired, k.paired != 0);
  }
}

TEST_F(ScanTest, PhysicalOrderOnHddFindsTheSameFiles) {
  ScanStats stats;
  ScanOptions o = Options();
  o.storage = StorageChoice::kHdd;
  o.io_threads = 0;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("hdd.idx"), &stats));
  EXPECT_EQ(stats.order, ReadOrder::kPhysical);
  EXPECT_EQ(stats.threads, 1);
  auto files = ReadByPath(out_dir_.Join("hdd.idx"));
  EXPECT_TRUE(header_.spinning);  // the plan makes larger rounds for it
  ASSERT_EQ(files.size(), 4u);
  for (const auto& [rel, data] : contents_) ExpectHashedLike(files[P(rel)], data);
}

// Files read after the walk: when they hold more than --memory, each one's pages are
// dropped once it is hashed (they would not stay cached until apply, and would push out
// the inodes and directories looked up again); when they fit, they stay for apply.
TEST_F(ScanTest, PagesReadAreDroppedOnlyWhenMoreThanMemory) {
  class Drops : public test::ForwardingSys {
   public:
    void DontNeed(int fd, uint64_t offset, uint64_t length) override {
      std::lock_guard<std::mutex> lk(mu);
      dropped += length;
      ForwardingSys::DontNeed(fd, offset, length);
    }
    std::mutex mu;
    uint64_t dropped = 0;
  };
  for (const uint64_t memory : {uint64_t(256) << 10, uint64_t(512) << 20}) {
    Drops sys;
    ScanStats stats;
    ScanOptions o = Options();
    o.storage = StorageChoice::kHdd;  // files kept and read after the walk, in disk order
    o.memory = memory;
    ASSERT_OK(Scan(sys, o, out_dir_.Join("drop.idx"), &stats));
    // a, b, c (and h, its hardlink) and sub/d: 500,005 bytes
    EXPECT_EQ(sys.dropped, memory < 500005 ? 500005u : 0u) << memory;
  }
}

TEST_F(ScanTest, ExcludesAndMinSizeRecorded) {
  ScanStats stats;
  ScanOptions o = Options();
  o.excludes = {"b"};
  o.min_size = 10;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("x.idx"), &stats));
  auto files = ReadByPath(out_dir_.Join("x.idx"));
  EXPECT_EQ(files.size(), 2u);  // a and c; b excluded, sub/d too small
  EXPECT_TRUE(files.count(P("a")));
  EXPECT_TRUE(files.count(P("c")));
  EXPECT_EQ(stats.excluded, 1u);
  EXPECT_EQ(header_.excludes, std::vector<std::string>{"b"});
  EXPECT_EQ(header_.min_size, 10u);
}

// Fault injection by path: replace a file just before it is read, deny one, fail reads
// of another, deny a directory.
class FaultSys : public test::ForwardingSys {
 public:
  std::string replace, deny, eio, deny_dir;
  std::atomic<int> replaced{0};

  Result<int> OpenNoFollow(const std::string& path) override {
    if (path == deny) return Status::Io("open " + path, EACCES);
    if (path == replace && replaced++ == 0) {
      // A new inode under the same name: write aside, rename over.
      test::WriteFile(path + ".new", "replacement content");
      EXPECT_EQ(::rename((path + ".new").c_str(), path.c_str()), 0);
    }
    auto fd = ForwardingSys::OpenNoFollow(path);
    if (fd.ok() && path == eio) {
      std::lock_guard<std::mutex> lk(mu_);
      eio_fds_.insert(*fd);
    }
    return fd;
  }
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    if (directory && name == deny_dir) return Status::Io("open " + name, EACCES);
    // Files opened by the walk itself (read in walk order) are matched by name.
    if (!directory && !deny.empty() && name == Base(deny)) return Status::Io("open " + name, EACCES);
    auto fd = ForwardingSys::OpenAt(dirfd, name, directory);
    if (fd.ok() && !directory && !eio.empty() && name == Base(eio)) {
      std::lock_guard<std::mutex> lk(mu_);
      eio_fds_.insert(*fd);
    }
    return fd;
  }
  static std::string Base(const std::string& p) { return p.substr(p.rfind('/') + 1); }
  void Close(int fd) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      eio_fds_.erase(fd);
    }
    ForwardingSys::Close(fd);
  }
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (eio_fds_.count(fd)) return Status::Io("read", EIO);
    }
    return ForwardingSys::Pread(fd, buf, len, offset);
  }

 private:
  std::mutex mu_;
  std::set<int> eio_fds_;
};

// Files read after the walk (inode order): one replaced between the walk and the read,
// one denied, one failing with EIO, and a directory denied.
TEST_F(ScanTest, ErrorsRecordedPerFile) {
  test::MakeDir(P("secret"));
  test::WriteFile(P("secret/x"), "hidden");
  FaultSys sys;
  sys.replace = P("b");
  sys.deny = P("sub/d");
  sys.eio = P("c");
  sys.deny_dir = "secret";
  ScanStats stats;
  Notices notices;
  ScanOptions o = Options();
  o.order = ReadOrder::kInode;
  ASSERT_OK(Scan(sys, o, out_dir_.Join("e.idx"), &stats, &notices));
  EXPECT_EQ(sys.replaced.load() >= 1, true);
  auto files = ReadByPath(out_dir_.Join("e.idx"));
  ASSERT_EQ(files.size(), 5u);  // a, b, c, sub/d and the secret directory

  ExpectHashedLike(files[P("a")], contents_["a"]);

  const FileEntry& b = files[P("b")];
  EXPECT_FALSE(b.hashed);
  EXPECT_NE(b.error.find("replaced"), std::string::npos) << b.error;
  EXPECT_TRUE(b.block_hashes.empty());

  const FileEntry& d = files[P("sub/d")];
  EXPECT_FALSE(d.hashed);
  EXPECT_EQ(d.errnum, EACCES);
  EXPECT_FALSE(d.error.empty());

  const FileEntry& c = files[P("c")];
  EXPECT_FALSE(c.hashed);
  EXPECT_EQ(c.errnum, EIO);
  EXPECT_EQ(c.other_paths, std::vector<std::string>{P("h")});

  const FileEntry& s = files[P("secret")];
  EXPECT_FALSE(s.hashed);
  EXPECT_EQ(s.errnum, EACCES);

  EXPECT_EQ(stats.errors, 4u);
  EXPECT_EQ(stats.hashed, 1u);
  EXPECT_TRUE(notices.Has(P("sub/d")));
  EXPECT_TRUE(notices.Has(P("secret")));
}

// Files read while the walk has them open (walk order, the SSD default): denied and
// failing files are recorded with their error, the others hashed.
TEST_F(ScanTest, ErrorsRecordedPerFileInWalkOrder) {
  test::MakeDir(P("secret"));
  test::WriteFile(P("secret/x"), "hidden");
  FaultSys sys;
  sys.deny = P("sub/d");
  sys.eio = P("b");
  sys.deny_dir = "secret";
  ScanStats stats;
  Notices notices;
  ScanOptions o = Options();
  o.order = ReadOrder::kNone;
  ASSERT_OK(Scan(sys, o, out_dir_.Join("e.idx"), &stats, &notices));
  EXPECT_EQ(stats.order, ReadOrder::kNone);
  auto files = ReadByPath(out_dir_.Join("e.idx"));
  ASSERT_EQ(files.size(), 5u);  // a, b, c (with h), sub/d and the secret directory
  ExpectHashedLike(files[P("a")], contents_["a"]);
  ExpectHashedLike(files[P("c")], contents_["c"]);
  EXPECT_EQ(files[P("c")].other_paths, std::vector<std::string>{P("h")});
  EXPECT_FALSE(files[P("b")].hashed);
  EXPECT_EQ(files[P("b")].errnum, EIO);
  EXPECT_TRUE(files[P("b")].block_hashes.empty());
  EXPECT_EQ(files[P("sub/d")].errnum, EACCES);
  EXPECT_EQ(files[P("secret")].errnum, EACCES);
  EXPECT_EQ(stats.errors, 3u);
  EXPECT_EQ(stats.hashed, 2u);
  EXPECT_TRUE(notices.Has(P("b")));
}

TEST_F(ScanTest, PreviousReusesUnchangedFiles) {
  Settle();
  ScanStats s1;
  const std::string idx1 = out_dir_.Join("1.idx"), idx2 = out_dir_.Join("2.idx");
  ASSERT_OK(Scan(DefaultSys(), Options(), idx1, &s1));
  auto first = ReadByPath(idx1);

  // Same size, new content and a clearly later mtime.
  contents_["c"] = test::RandomBytes(300000, 99);
  test::WriteFile(P("c"), contents_["c"]);
  struct timespec ts[2] = {{0, UTIME_OMIT}, {time(nullptr) + 100, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, P("c").c_str(), ts, 0), 0);

  ScanStats s2;
  ScanOptions o = Options();
  o.previous = idx1;
  ASSERT_OK(Scan(DefaultSys(), o, idx2, &s2));
  EXPECT_EQ(s2.previous_files, 4u);
  EXPECT_FALSE(s2.previous_truncated);
  EXPECT_EQ(s2.reused, 3u);
  EXPECT_EQ(s2.hashed, 1u);
  EXPECT_EQ(s2.bytes_read, 300000u);
  auto second = ReadByPath(idx2);
  ASSERT_EQ(second.size(), 4u);
  for (const char* rel : {"a", "b", "sub/d"}) {
    SCOPED_TRACE(rel);
    EXPECT_TRUE(second[P(rel)].reused);
    EXPECT_EQ(second[P(rel)].hash, first[P(rel)].hash);
    EXPECT_EQ(second[P(rel)].block_hashes, first[P(rel)].block_hashes);
    ExpectHashedLike(second[P(rel)], contents_[rel]);
  }
  EXPECT_FALSE(second[P("c")].reused);
  ExpectHashedLike(second[P("c")], contents_["c"]);
  EXPECT_NE(second[P("c")].hash, first[P("c")].hash);
}

// A file system that keeps small files inline (as btrfs does) and counts opens by name.
class InlineSys : public test::ForwardingSys {
 public:
  Status Fiemap(int fd, std::vector<FiemapExtent>* out) override {
    auto st = Fstat(fd);
    if (st.ok() && st->size < 4096) {
      out->assign(1, {0, 0, 4096, kExtentInline | kExtentLast | 0x100});
      return Status::Ok();
    }
    return ForwardingSys::Fiemap(fd, out);
  }
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    if (!directory) {
      std::lock_guard<std::mutex> lk(mu_);
      opens_[name]++;
    }
    return ForwardingSys::OpenAt(dirfd, name, directory);
  }
  int opens(const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    return opens_[name];
  }
  void Clear() {
    std::lock_guard<std::mutex> lk(mu_);
    opens_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> opens_;
};

// Unchanged files that held only inline data are not even opened again; their record
// (inline extent, hashes) is carried over. A changed one is opened and read.
TEST_F(ScanTest, PreviousInlineFilesNotOpened) {
  Settle();
  InlineSys sys;
  const std::string idx1 = out_dir_.Join("1.idx"), idx2 = out_dir_.Join("2.idx"), idx3 = out_dir_.Join("3.idx");
  ScanStats s1;
  ASSERT_OK(Scan(sys, Options(), idx1, &s1));
  EXPECT_EQ(sys.opens("d"), 1);
  auto first = ReadByPath(idx1);
  ASSERT_EQ(first[P("sub/d")].extents.size(), 1u);
  EXPECT_TRUE(first[P("sub/d")].extents[0].flags & kExtentInline);

  sys.Clear();
  ScanStats s2;
  ScanOptions o = Options();
  o.previous = idx1;
  ASSERT_OK(Scan(sys, o, idx2, &s2));
  EXPECT_EQ(sys.opens("d"), 0) << "an unchanged inline file was opened";
  EXPECT_EQ(sys.opens("a"), 1) << "a file with data is mapped again";
  EXPECT_EQ(s2.reused, 4u);
  auto second = ReadByPath(idx2);
  ASSERT_EQ(second.size(), 4u);
  const FileEntry& d = second[P("sub/d")];
  EXPECT_TRUE(d.reused);
  ExpectHashedLike(d, contents_["sub/d"]);
  ASSERT_EQ(d.extents.size(), 1u);
  EXPECT_EQ(d.extents[0].flags, first[P("sub/d")].extents[0].flags);

  // Grown (new size and mtime): opened and read again.
  contents_["sub/d"] = "small, and a little more";
  test::WriteFile(P("sub/d"), contents_["sub/d"]);
  struct timespec ts[2] = {{0, UTIME_OMIT}, {time(nullptr) + 100, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, P("sub/d").c_str(), ts, 0), 0);
  sys.Clear();
  ScanStats s3;
  o.previous = idx2;
  ASSERT_OK(Scan(sys, o, idx3, &s3));
  EXPECT_EQ(sys.opens("d"), 1);
  EXPECT_EQ(s3.hashed, 1u);
  auto third = ReadByPath(idx3);
  EXPECT_FALSE(third[P("sub/d")].reused);
  ExpectHashedLike(third[P("sub/d")], contents_["sub/d"]);
}

// A btrfs-like file system: one subvolume with a uuid and a generation, and a list of
// inodes whose metadata was written since a given generation. Counts opens and FIEMAPs.
class GenerationSys : public InlineSys {
 public:
  Result<FsIdentity> Identify(int fd) override {
    auto id = InlineSys::Identify(fd);
    if (!id.ok()) return id;
    std::lock_guard<std::mutex> lk(mu_);
    id->subvolume_uuid = uuid;
    id->generation = generation;
    return id;
  }
  Status ChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) override {
    (void)fd;
    std::lock_guard<std::mutex> lk(mu_);
    searches.insert(since);
    slices.push_back({first, last});
    if (!search_error.ok()) return search_error;
    inodes->clear();
    for (uint64_t ino : changed)
      if (ino >= first && ino <= last) inodes->push_back(ino);
    return Status::Ok();
  }
  // Whether the slices searched cover [256, 2^64 - 256] once, without overlap.
  bool SlicesCoverEveryInode() {
    std::lock_guard<std::mutex> lk(mu_);
    auto s = slices;
    std::sort(s.begin(), s.end());
    uint64_t next = 256;
    for (const auto& [first, last] : s) {
      if (first != next || last < first) return false;
      next = last + 1;
    }
    return next == ~uint64_t(0) - 254;
  }
  Status Fiemap(int fd, std::vector<FiemapExtent>* out) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      fiemaps++;
    }
    return InlineSys::Fiemap(fd, out);
  }
  void Reset() {
    Clear();
    std::lock_guard<std::mutex> lk(mu_);
    searches.clear();
    slices.clear();
    fiemaps = 0;
  }

  std::mutex mu_;
  std::string uuid = "5f0c9a64-0000-4000-8000-000000000001";
  uint64_t generation = 100;
  std::vector<uint64_t> changed;
  Status search_error;
  std::set<uint64_t> searches;  // the generations searched from
  std::vector<std::pair<uint64_t, uint64_t>> slices;
  int fiemaps = 0;
};

uint64_t InodeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

// Files btrfs says have no metadata written since the previous index's generation are
// finished from a stat: not opened, not mapped, their record carried over. Files it
// lists are opened and mapped again; a new generation is recorded for the next scan.
TEST_F(ScanTest, PreviousUnchangedSinceGenerationNotOpened) {
  Settle();
  GenerationSys sys;
  const std::string idx1 = out_dir_.Join("1.idx"), idx2 = out_dir_.Join("2.idx"), idx3 = out_dir_.Join("3.idx");
  ScanStats s1;
  ASSERT_OK(Scan(sys, Options(), idx1, &s1));
  auto first = ReadByPath(idx1);
  ASSERT_FALSE(header_.filesystems.empty());
  EXPECT_EQ(header_.filesystems[0].generation, 100u);
  EXPECT_EQ(header_.filesystems[0].subvolume_uuid, sys.uuid);
  EXPECT_TRUE(sys.searches.empty()) << "no previous index: nothing to search for";

  sys.Reset();
  sys.generation = 107;
  sys.changed = {InodeOf(P("b"))};
  ScanOptions o = Options();
  o.previous = idx1;
  ScanStats s2;
  Notices notes;
  ASSERT_OK(Scan(sys, o, idx2, &s2, &notes));
  ASSERT_EQ(sys.searches, std::set<uint64_t>{100}) << "searched from the previous generation";
  EXPECT_TRUE(sys.SlicesCoverEveryInode());
  EXPECT_EQ(sys.opens("a"), 0) << "unchanged since generation 100, yet opened";
  EXPECT_EQ(sys.opens("b"), 1) << "listed as changed, so it must be mapped again";
  EXPECT_EQ(sys.opens("d"), 0);
  EXPECT_EQ(s2.reused, 4u);
  EXPECT_EQ(s2.hashed, 0u);
  EXPECT_EQ(s2.unopened, 2u) << "a and sub/d (c is hardlinked: merged after the walk)";
  auto second = ReadByPath(idx2);
  EXPECT_EQ(header_.filesystems[0].generation, 107u);
  ASSERT_EQ(second.size(), first.size());
  for (const auto& [path, f] : first) {
    const FileEntry& g = second[path];
    EXPECT_TRUE(g.reused) << path;
    EXPECT_EQ(g.hash, f.hash) << path;
    EXPECT_EQ(g.block_hashes, f.block_hashes) << path;
    EXPECT_EQ(g.inode_flags, f.inode_flags) << path;
    ASSERT_EQ(g.extents.size(), f.extents.size()) << path;
    for (size_t i = 0; i < f.extents.size(); ++i) {
      EXPECT_EQ(g.extents[i].physical, f.extents[i].physical) << path;
      EXPECT_EQ(g.extents[i].length, f.extents[i].length) << path;
      EXPECT_EQ(g.extents[i].flags, f.extents[i].flags) << path;
    }
  }

  // A changed identity is read again even when btrfs does not list the inode.
  contents_["a"] = test::RandomBytes(100000, 9);
  test::WriteFile(P("a"), contents_["a"]);
  struct timespec ts[2] = {{0, UTIME_OMIT}, {time(nullptr) + 100, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, P("a").c_str(), ts, 0), 0);
  sys.Reset();
  sys.changed.clear();
  o.previous = idx2;
  ScanStats s3;
  ASSERT_OK(Scan(sys, o, idx3, &s3));
  EXPECT_EQ(sys.searches, std::set<uint64_t>{107});
  EXPECT_TRUE(sys.SlicesCoverEveryInode());
  EXPECT_EQ(sys.opens("a"), 1);
  EXPECT_EQ(s3.hashed, 1u);
  ExpectHashedLike(ReadByPath(idx3)[P("a")], contents_["a"]);
}

// Every case where the generation cannot be trusted maps every file again.
TEST_F(ScanTest, GenerationNotTrustedMapsEveryFile) {
  Settle();
  const std::string idx1 = out_dir_.Join("1.idx");
  {
    GenerationSys sys;
    ScanStats s;
    ASSERT_OK(Scan(sys, Options(), idx1, &s));
  }
  struct Case {
    const char* what;
    std::function<void(GenerationSys&, ScanOptions&)> setup;
    const char* notice;
    bool searched;
  };
  const std::vector<Case> cases = {
      {"another subvolume under the same id", [](GenerationSys& s, ScanOptions&) { s.uuid[0] = '6'; },
       "is not the one the previous index saw", false},
      {"an older generation (a restored filesystem)", [](GenerationSys& s, ScanOptions&) { s.generation = 99; },
       "is not the one the previous index saw", false},
      {"the search refused (not root)",
       [](GenerationSys& s, ScanOptions&) { s.search_error = Status::Io("BTRFS_IOC_TREE_SEARCH_V2", EPERM); },
       "this needs root", true},
      {"--refresh-extents", [](GenerationSys&, ScanOptions& o) { o.refresh_extents = true; }, nullptr, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    GenerationSys sys;
    sys.generation = 120;
    ScanOptions o = Options();
    o.previous = idx1;
    c.setup(sys, o);
    ScanStats s;
    Notices notes;
    ASSERT_OK(Scan(sys, o, out_dir_.Join("2.idx"), &s, &notes));
    EXPECT_EQ(sys.opens("a"), 1);
    EXPECT_EQ(sys.opens("b"), 1);
    EXPECT_EQ(s.reused, 4u);
    EXPECT_EQ(s.unopened, 1u) << "only the inline file";
    EXPECT_EQ(!sys.searches.empty(), c.searched);
    if (c.notice) {
      EXPECT_TRUE(notes.Has(c.notice)) << c.notice;
    }
  }
}

TEST_F(ScanTest, PreviousWithOtherBlockSizeReusesNothing) {
  ScanStats s1, s2;
  ASSERT_OK(Scan(DefaultSys(), Options(), out_dir_.Join("1.idx"), &s1));
  ScanOptions o = Options();
  o.block_size = 128 * 1024;
  o.previous = out_dir_.Join("1.idx");
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &s2));
  EXPECT_EQ(s2.reused, 0u);
  EXPECT_EQ(s2.hashed, 4u);
}

TEST_F(ScanTest, TruncatedPreviousAccepted) {
  Settle();
  ScanStats s1;
  ASSERT_OK(Scan(DefaultSys(), Options(), out_dir_.Join("1.idx"), &s1));
  auto c = ReadIndexFile(out_dir_.Join("1.idx"));
  ASSERT_TRUE(c.ok());
  test::WriteIndex(out_dir_.Join("cut.idx"), c->header, c->files, 2, /*finish=*/false);
  ASSERT_FALSE(ReadIndexFile(out_dir_.Join("cut.idx")).ok());

  ScanStats s2;
  Notices notices;
  ScanOptions o = Options();
  o.previous = out_dir_.Join("cut.idx");
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &s2, &notices));
  EXPECT_TRUE(s2.previous_truncated);
  EXPECT_EQ(s2.reused, 4u);
  EXPECT_EQ(s2.bytes_read, 0u);
  EXPECT_TRUE(notices.Has("incomplete"));
}

TEST_F(ScanTest, DamagedPreviousIsAnError) {
  test::WriteFile(out_dir_.Join("bad.idx"), "not an index");
  ScanStats stats;
  ScanOptions o = Options();
  o.previous = out_dir_.Join("bad.idx");
  Status s = Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &stats);
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "--previous"));
  EXPECT_FALSE(test::Exists(out_dir_.Join("2.idx")));
}

TEST_F(ScanTest, StopFlagWritesATruncatedIndex) {
  std::atomic<bool> stop{true};
  ScanOptions o = Options();
  o.stop = &stop;
  ScanStats stats;
  Status s = Scan(DefaultSys(), o, out_dir_.Join("s.idx"), &stats);
  EXPECT_TRUE(StatusIs(s, Status::Code::kInterrupted));
  EXPECT_TRUE(stats.interrupted);
  EXPECT_TRUE(StatusIs(ReadIndexFile(out_dir_.Join("s.idx")).status(), Status::Code::kCorrupt, "truncated"));
  IndexReadOptions ro;
  ro.allow_truncated = true;
  auto c = ReadIndexFile(out_dir_.Join("s.idx"), ro);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->result.truncated);
  EXPECT_EQ(c->files.size(), stats.files);
}

// Sets the stop flag after the first file is read.
class StopAfterFirstReadSys : public test::ForwardingSys {
 public:
  explicit StopAfterFirstReadSys(std::atomic<bool>* stop) : stop_(stop) {}
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    auto r = ForwardingSys::Pread(fd, buf, len, offset);
    stop_->store(true);
    return r;
  }

 private:
  std::atomic<bool>* stop_;
};

TEST_F(ScanTest, StoppedScanCanBeReusedAsPrevious) {
  Settle();
  for (int i = 0; i < 20; ++i) test::WriteFile(P("more" + std::to_string(i)), test::RandomBytes(5000, 100 + i));
  std::atomic<bool> stop{false};
  StopAfterFirstReadSys sys(&stop);
  ScanOptions o = Options();
  o.io_threads = 1;
  o.stop = &stop;
  ScanStats s1;
  EXPECT_TRUE(StatusIs(Scan(sys, o, out_dir_.Join("1.idx"), &s1), Status::Code::kInterrupted));
  EXPECT_GE(s1.files, 1u);
  EXPECT_LT(s1.files, 24u);

  ScanStats s2;
  ScanOptions o2 = Options();
  o2.previous = out_dir_.Join("1.idx");
  ASSERT_OK(Scan(DefaultSys(), o2, out_dir_.Join("2.idx"), &s2));
  EXPECT_TRUE(s2.previous_truncated);
  EXPECT_EQ(s2.files, 24u);
  EXPECT_EQ(s2.reused, s1.hashed);
  EXPECT_EQ(s2.reused + s2.hashed, 24u);
}

TEST_F(ScanTest, InvalidOptions) {
  ScanStats stats;
  ScanOptions o = Options();
  o.block_size = 1000;
  EXPECT_TRUE(StatusIs(Scan(DefaultSys(), o, out_dir_.Join("x"), &stats), Status::Code::kInvalidArgument, "block"));
  o = Options();
  o.roots.clear();
  EXPECT_TRUE(StatusIs(Scan(DefaultSys(), o, out_dir_.Join("x"), &stats), Status::Code::kInvalidArgument));
  o = Options();
  o.roots = {P("missing")};
  Status s = Scan(DefaultSys(), o, out_dir_.Join("x"), &stats);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.errnum(), ENOENT);
  EXPECT_FALSE(test::Exists(out_dir_.Join("x")));
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// Where each zstd frame of a file ends.
std::vector<size_t> FrameEnds(const std::string& data) {
  std::vector<size_t> ends;
  for (size_t at = 0; at < data.size();) {
    size_t n = ZSTD_findFrameCompressedSize(data.data() + at, data.size() - at);
    if (ZSTD_isError(n)) break;
    at += n;
    ends.push_back(at);
  }
  return ends;
}

// A previous index with a batch that fails its checksum is refused, naming the file and
// the batch's offset, instead of being taken for an interrupted scan; with
// previous_damaged_rescan it is ignored and every file is read.
TEST_F(ScanTest, DamagedPreviousRefusedWithItsOffset) {
  ScanStats s1;
  ASSERT_OK(Scan(DefaultSys(), Options(), out_dir_.Join("1.idx"), &s1));
  auto c = ReadIndexFile(out_dir_.Join("1.idx"));
  ASSERT_TRUE(c.ok());
  const std::string two = out_dir_.Join("two.idx");
  test::WriteIndex(two, c->header, c->files, 2);  // header, two batches, trailer
  std::string data = test::ReadFile(two);
  std::vector<size_t> ends = FrameEnds(data);
  ASSERT_EQ(ends.size(), 4u);
  data[ends[2] - 2] ^= 0x04;  // the second batch's checksum
  const std::string bad = out_dir_.Join("bad.idx");
  test::WriteFile(bad, data);

  ScanOptions o = Options();
  o.previous = bad;
  ScanStats s2;
  Status s = Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &s2);
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, bad));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "byte " + std::to_string(ends[1])));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "--previous-damaged=rescan"));
  EXPECT_FALSE(test::Exists(out_dir_.Join("2.idx")));

  o.previous_damaged_rescan = true;
  Notices notices;
  ScanStats s3;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("3.idx"), &s3, &notices));
  EXPECT_TRUE(s3.previous_damaged);
  EXPECT_EQ(s3.reused, 0u);
  EXPECT_EQ(s3.hashed, 4u);
  EXPECT_TRUE(notices.Has("damaged"));
  auto files = ReadByPath(out_dir_.Join("3.idx"));
  ExpectHashedLike(files[P("a")], contents_["a"]);
  ExpectHashedLike(files[P("c")], contents_["c"]);
}

// A file renamed and rewritten with its old mtime restored is read again: its ctime
// changed, and a rename no longer excuses that for hash reuse.
TEST_F(ScanTest, RenamedAndRewrittenWithOldMtimeIsReadAgain) {
  Settle();
  ScanStats s1;
  ASSERT_OK(Scan(DefaultSys(), Options(), out_dir_.Join("1.idx"), &s1));
  const FileStat before = test::StatPath(P("a"));
  ASSERT_EQ(::rename(P("a").c_str(), P("a2").c_str()), 0);
  contents_["a2"] = test::RandomBytes(contents_["a"].size(), 77);
  int fd = ::open(P("a2").c_str(), O_WRONLY | O_CLOEXEC);  // same inode, new bytes
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, contents_["a2"].data(), contents_["a2"].size(), 0), ssize_t(contents_["a2"].size()));
  ::close(fd);
  struct timespec ts[2] = {{0, UTIME_OMIT}, {before.mtime_ns / 1000000000, before.mtime_ns % 1000000000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, P("a2").c_str(), ts, 0), 0);
  const FileStat after = test::StatPath(P("a2"));
  ASSERT_EQ(after.ino, before.ino);
  ASSERT_EQ(after.mtime_ns, before.mtime_ns);
  ASSERT_EQ(after.size, before.size);

  ScanOptions o = Options();
  o.previous = out_dir_.Join("1.idx");
  ScanStats s2;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &s2));
  auto files = ReadByPath(out_dir_.Join("2.idx"));
  EXPECT_FALSE(files[P("a2")].reused);
  ExpectHashedLike(files[P("a2")], contents_["a2"]);
  EXPECT_TRUE(files[P("b")].reused);
}

// Filesystems that report no holes make a sparse file read as data: the stop flag still
// ends the scan while one huge file is being read, within a few buffers of it, and that
// file is left out of the index (the next scan reads it). The flag is set once 64 MiB of
// the file were read (not after a time, so a loaded machine changes nothing), and the
// scan must have read little more when it ends: a scan that did not look at the flag
// would read all 64 GiB.
class NoHolesSys : public test::ForwardingSys {
 public:
  uint64_t Seek(int fd, uint64_t offset, bool hole) override {
    (void)fd;
    return hole ? UINT64_MAX : offset;  // all data, no hole anywhere
  }
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    auto r = ForwardingSys::Pread(fd, buf, len, offset);
    if (r.ok() && (read += *r) >= stop_after) stop->store(true);
    return r;
  }
  std::atomic<uint64_t> read{0};
  uint64_t stop_after = 64u << 20;
  std::atomic<bool>* stop = nullptr;
};

TEST_F(ScanTest, StopsInsideOneHugeFile) {
  const std::string big = P("huge");
  int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t(64) << 30), 0);  // 64 GiB that read as zeros
  ::close(fd);
  for (ReadOrder order : {ReadOrder::kNone, ReadOrder::kInode}) {
    SCOPED_TRACE(ReadOrderName(order));
    std::atomic<bool> stop{false};
    ScanOptions o = Options();
    o.order = order;
    o.stop = &stop;
    NoHolesSys sys;
    sys.stop = &stop;
    ScanStats stats;
    Status s = Scan(sys, o, out_dir_.Join("s.idx"), &stats);
    EXPECT_TRUE(StatusIs(s, Status::Code::kInterrupted));
    // Each reader may finish the buffer it was reading (256 KiB); 64 MiB more is plenty.
    EXPECT_LT(sys.read.load(), sys.stop_after + (64u << 20));
    auto files = ReadByPath(out_dir_.Join("s.idx"), true);
    EXPECT_FALSE(files.count(big));
  }
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// A file that is not an index at all is refused as such, even with
// previous_damaged_rescan: only damage inside an index can be ignored.
TEST_F(ScanTest, PreviousThatIsNoIndexIsNotDamage) {
  test::WritePlan(out_dir_.Join("p.plan"), PlanHeader(), {});
  ScanOptions o = Options();
  o.previous = out_dir_.Join("p.plan");
  o.previous_damaged_rescan = true;
  ScanStats stats;
  Status s = Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &stats);
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "is a dedupe plan, not an index"));
  EXPECT_EQ(s.message().find("--previous-damaged"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("bad frame"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// Where the filesystem cannot answer (here: not btrfs), a scan with --previous says once
// why it does not follow btrfs changes, and walks: the same records, hashes reused.
TEST_F(ScanTest, NotFollowingSaysWhyOnceAndWalks) {
  Settle();
  const std::string idx1 = out_dir_.Join("1.idx");
  ScanStats s1;
  ASSERT_OK(Scan(DefaultSys(), Options(), idx1, &s1));
  ScanOptions o = Options();
  o.previous = idx1;
  ScanStats s2;
  Notices notes;
  ASSERT_OK(Scan(DefaultSys(), o, out_dir_.Join("2.idx"), &s2, &notes));
  int said = 0;
  for (const auto& l : notes.lines) said += l.find("not following btrfs changes") != std::string::npos;
  EXPECT_EQ(said, 1);
  EXPECT_FALSE(s2.followed);
  EXPECT_EQ(s2.files, s1.files);
  EXPECT_EQ(s2.reused, s1.files);
  auto a = ReadByPath(idx1);
  auto b = ReadByPath(out_dir_.Join("2.idx"));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [p, e] : a) EXPECT_EQ(b[p].hash, e.hash) << p;
  EXPECT_TRUE(header_.directories);
}

// The index records every directory read, before the first file record.
TEST_F(ScanTest, DirectoriesRecordedBeforeFiles) {
  const std::string idx = out_dir_.Join("d.idx");
  // An mtime unlike its ctime: the two are not mixed up.
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1'000'000'000, 5}};
  ASSERT_EQ(::utimensat(AT_FDCWD, P("sub").c_str(), times, 0), 0);
  ScanStats s;
  ASSERT_OK(Scan(DefaultSys(), Options(), idx, &s));
  std::vector<std::string> dirs;
  bool file_seen = false, dir_after_file = false;
  IndexReadOptions ro;
  ro.on_dirs = [&](const IndexHeader&, std::vector<IndexDir>& ds) {
    for (auto& d : ds) {
      dirs.push_back(d.path);
      // Its times as stat gives them: a followed scan compares them.
      struct stat st;
      if (::stat(d.path.c_str(), &st) != 0) {
        ADD_FAILURE() << d.path;
        continue;
      }
      EXPECT_EQ(d.mtime_ns, int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec) << d.path;
      EXPECT_EQ(d.ctime_ns, int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec) << d.path;
    }
    dir_after_file |= file_seen && !ds.empty();
    return Status::Ok();
  };
  auto r = ReadIndex(idx, ro, [](const IndexHeader&) { return Status::Ok(); },
                     [&](const IndexHeader&, std::vector<FileEntry>& b) {
                       file_seen |= !b.empty();
                       return Status::Ok();
                     });
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(dirs, (std::vector<std::string>{dir_.path(), P("sub")}));
  EXPECT_FALSE(dir_after_file);
  EXPECT_EQ(r->totals.dirs, 2u);
}

}  // namespace
}  // namespace oans
