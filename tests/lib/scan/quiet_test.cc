#include "lib/scan/quiet.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

// When the previous scans began: long after Record's ctime (7 ns).
constexpr int64_t kBegan = 10'000'000'000;

FileEntry Record(uint64_t ino) {
  FileEntry e;
  e.path = "/t/f" + std::to_string(ino);
  e.ino = ino;
  e.size = 10000;
  e.mtime_ns = 5;
  e.ctime_ns = 7;
  e.nlink = 1;
  e.uid = 1000;
  e.gid = 100;
  e.hashed = true;
  e.extents = {{0, 1 << 20, 12288, kExtentLast}};
  return e;
}

// The inode as its items have it: what Record(ino) says.
ChangedInode Items(uint64_t ino) {
  ChangedInode c;
  c.ino = ino;
  c.exists = c.mapped = true;
  c.item.mode = S_IFREG | 0644;
  c.item.size = c.map.inode.size = 10000;
  c.map.inode.mtime_ns = 5;
  c.map.inode.ctime_ns = 7;
  c.map.inode.nlink = 1;
  c.map.inode.uid = 1000;
  c.map.inode.gid = 100;
  c.map.ino = ino;
  c.map.extents = {{0, 1 << 20, 12288, kExtentLast}};
  return c;
}

// A header of one btrfs filesystem, its scan begun at `began`.
IndexHeader OneFs(int64_t began) {
  IndexHeader h;
  h.created_ns = began;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
  return h;
}

// Records of inodes [first, end) on one filesystem, written as the previous index in
// `dir` and loaded into `q` in one pass.
void LoadRecords(const test::TempDir& dir, uint64_t first, uint64_t end, QuietRecords* q) {
  std::vector<FileEntry> records;
  for (uint64_t ino = first; ino < end; ++ino) records.push_back(Record(ino));
  test::WriteIndex(dir.Join("prev.idx"), OneFs(kBegan + 42), records);
  q->Want(0);
  uint64_t upto = 0;
  ASSERT_OK(q->Load(dir.Join("prev.idx"), kBegan + 42, 1 << 20, 0, &upto));
  ASSERT_EQ(upto, UINT64_MAX);
}

// `n` records of inode `ino` at as many paths (a damaged index, or a crafted one).
std::vector<FileEntry> Links(uint64_t ino, size_t n) {
  std::vector<FileEntry> out(n, Record(ino));
  for (size_t i = 0; i < n; ++i) out[i].path += "-" + std::to_string(i);
  return out;
}

TEST(QuietTest, ARecordAndItemsThatSayTheSameHaveOneDigest) {
  const QuietDigest a = QuietDigest::Of(Record(300)), b = QuietDigest::Of(Items(300));
  EXPECT_NE(a.stat, 0u);
  EXPECT_EQ(a.stat, b.stat);
  EXPECT_EQ(a.extents, b.extents);
  // Whether another file shares the extent is not the file's own state.
  FileEntry shared = Record(300);
  shared.extents[0].flags |= kExtentShared;
  EXPECT_EQ(QuietDigest::Of(shared).extents, a.extents);
}

TEST(QuietTest, EachFieldCounts) {
  const QuietDigest was = QuietDigest::Of(Record(300));
  std::vector<ChangedInode> changed(8, Items(300));
  changed[0].map.inode.ctime_ns++;
  changed[1].map.inode.mtime_ns++;
  changed[2].map.inode.size++;
  changed[3].map.inode.nlink++;
  changed[4].map.inode.uid++;
  changed[5].map.inode.gid++;
  changed[6].map.inode_flags = 0x10;
  changed[7].map.extents[0].physical += 4096;
  for (size_t i = 0; i < 7; ++i) EXPECT_NE(QuietDigest::Of(changed[i]).stat, was.stat) << i;
  EXPECT_EQ(QuietDigest::Of(changed[7]).stat, was.stat);
  EXPECT_NE(QuietDigest::Of(changed[7]).extents, was.extents);
}

TEST(QuietTest, NoDigestForWhatCannotBeCarried) {
  FileEntry unread = Record(300);
  unread.hashed = false;
  FileEntry failed = Record(300);
  failed.error = "Permission denied";
  EXPECT_EQ(QuietDigest::Of(unread).stat, 0u);
  EXPECT_EQ(QuietDigest::Of(failed).stat, 0u);
  ChangedInode unmapped = Items(300);
  unmapped.mapped = false;
  EXPECT_EQ(QuietDigest::Of(unmapped).stat, 0u);
  // A directory record of an index that did not record directories' times.
  EXPECT_EQ(QuietDigest::Of(IndexDir{"/t", 0, 300, 0, 0}).stat, 0u);
}

// A directory's digest is of its times alone, and never a file's with the same times.
TEST(QuietTest, ADirectoryIsQuietByItsTimes) {
  ChangedInode dir = Items(300);
  dir.item.mode = S_IFDIR | 0755;
  dir.mapped = false;
  dir.item.mtime_ns = 5;
  dir.item.ctime_ns = 7;
  const QuietDigest was = QuietDigest::Of(IndexDir{"/t/d", 0, 300, 5, 7});
  EXPECT_NE(was.stat, 0u);
  EXPECT_EQ(QuietDigest::Of(dir).stat, was.stat);
  EXPECT_NE(QuietDigest::Of(Items(300)).stat, was.stat);  // a file of the same times
  ChangedInode later = dir;
  later.item.ctime_ns = 8;
  EXPECT_NE(QuietDigest::Of(later).stat, was.stat);
  later = dir;
  later.item.mtime_ns = 6;
  EXPECT_NE(QuietDigest::Of(later).stat, was.stat);
}

// Directory records are judged with the files: the same times, taken (its entries are
// not read); other times, a racy ctime, or no times recorded, looked at.
TEST(QuietTest, DirectoryRecordsAreTakenByTheirTimes) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 46;
  h.directories = true;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
  {
    auto out = OutputFile::Open(dir.Join("prev.idx"));
    ASSERT_TRUE(out.ok());
    IndexWriter w(out->get(), 16);
    ASSERT_OK(w.WriteHeader(h));
    ASSERT_OK(w.AddDir({"/t/a", 0, 400, 5, 7}));
    ASSERT_OK(w.AddDir({"/t/b", 0, 401, 5, 7}));
    ASSERT_OK(w.AddDir({"/t/c", 0, 402, 5, h.created_ns - 10}));  // racy
    ASSERT_OK(w.AddDir({"/t/d", 0, 403, 0, 0}));                  // no times
    ASSERT_OK(w.Add(Record(300)));
    ASSERT_OK(w.Finish());
    ASSERT_OK((*out)->Commit());
  }
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  ASSERT_OK(q.Load(dir.Join("prev.idx"), kBegan + 46, 1 << 20, 0, &upto));
  auto items = [](uint64_t ino, int64_t mtime, int64_t ctime) {
    ChangedInode c;
    c.ino = ino;
    c.exists = true;
    c.item.mode = S_IFDIR | 0755;
    c.item.mtime_ns = mtime;
    c.item.ctime_ns = ctime;
    return c;
  };
  ChangedInode a = items(400, 5, 7), b = items(401, 9, 9), c = items(402, 5, h.created_ns - 10), d = items(403, 5, 7);
  ChangedInode f = Items(300);
  EXPECT_TRUE(q.Take(0, a));
  EXPECT_FALSE(q.Take(0, b));  // entries changed since: new times
  EXPECT_FALSE(q.Take(0, c));
  EXPECT_FALSE(q.Take(0, d));
  EXPECT_TRUE(q.Take(0, f));
  EXPECT_EQ(q.moved(), 0u);
}

TEST(QuietTest, TakesTheUnchangedAndTheMovedOnly) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 42;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/"), test::BtrfsFs("u", 256, 41, "/")};
  std::vector<FileEntry> records = {Record(300), Record(301), Record(302), Record(303)};
  records[3].hashed = false;  // left unread: looked at again
  for (auto& r : records) r.fs = 1;
  FileEntry other_fs = Record(304);
  other_fs.fs = 0;
  records.push_back(other_fs);
  test::WriteIndex(dir.Join("prev.idx"), h, records, 2);
  QuietRecords q;
  q.Want(1);
  uint64_t upto = 0;
  Status loaded = q.Load(dir.Join("prev.idx"), kBegan + 42, 1 << 20, 0, &upto);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(upto, UINT64_MAX);

  ChangedInode same = Items(300), moved = Items(301), written = Items(302), unread = Items(303);
  ChangedInode elsewhere = Items(304), fresh = Items(305);
  moved.map.extents[0].physical = 8 << 20;
  written.map.inode.ctime_ns = 9;
  EXPECT_TRUE(q.Take(1, same));
  EXPECT_TRUE(q.Take(1, moved));
  EXPECT_FALSE(q.Take(1, written));
  EXPECT_FALSE(q.Take(1, unread));
  EXPECT_FALSE(q.Take(1, elsewhere));  // its record is another filesystem's
  EXPECT_FALSE(q.Take(1, fresh));      // no record
  EXPECT_FALSE(q.Take(0, same));       // a filesystem not wanted
  EXPECT_EQ(q.moved(), 1u);
  q.Done();
  EXPECT_TRUE(q.IsMoved(1, 301));
  EXPECT_FALSE(q.IsMoved(1, 300));
  EXPECT_FALSE(q.IsMoved(0, 301));
  const auto m = q.Moved(1, 301);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->extents.size(), 1u);
  EXPECT_EQ(m->extents[0].physical, uint64_t(8 << 20));
  EXPECT_FALSE(q.Moved(1, 300));
  EXPECT_FALSE(q.Moved(0, 301));
  ChangedInode again = Items(300);
  EXPECT_FALSE(q.Take(1, again));  // done: nothing more is judged
}

TEST(QuietTest, AnIndexReplacedSinceItsHeaderWasReadIsRefused) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 43;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
  test::WriteIndex(dir.Join("prev.idx"), h, {Record(300)});
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  EXPECT_EQ(q.Load(dir.Join("prev.idx"), kBegan + 42, 1 << 20, 0, &upto).message(), "the previous index changed while it was read");
}

// Records that do not fit are judged in later passes, each over the inode numbers above
// the last: every record is held by one pass, and never more than fit.
TEST(QuietTest, RecordsThatDoNotFitAreJudgedInLaterPasses) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 44;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/"), test::BtrfsFs("u", 256, 41, "/")};
  // Out of inode order, on two filesystems sharing numbers.
  std::vector<FileEntry> records;
  for (uint64_t ino : {309, 300, 305, 302, 308, 301, 307, 303, 306, 304}) {
    records.push_back(Record(ino));
    if (ino % 3 == 0) {
      records.push_back(Record(ino));
      records.back().fs = 1;
    }
  }
  test::WriteIndex(dir.Join("prev.idx"), h, records, 3);
  QuietRecords q;
  q.Want(0);
  q.Want(1);
  const uint64_t most = 4 * 24;  // four records
  std::vector<uint64_t> taken;
  int passes = 0;
  for (uint64_t from = 0; from != UINT64_MAX; ++passes) {
    ASSERT_LT(passes, 14);
    uint64_t upto = 0;
    Status loaded = q.Load(dir.Join("prev.idx"), kBegan + 44, most, from, &upto);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    ASSERT_GT(upto, from);
    size_t held = 0;
    for (uint64_t ino = 290; ino < 320; ++ino)
      for (uint32_t fs : {0u, 1u}) {
        ChangedInode c = Items(ino);
        if (!q.Take(fs, c)) continue;
        EXPECT_GE(ino, from);
        EXPECT_LT(ino, upto);
        taken.push_back(ino * 2 + fs);
        ++held;
      }
    EXPECT_LE(held, 4u);
    from = upto;
  }
  EXPECT_GT(passes, 2);
  std::sort(taken.begin(), taken.end());
  std::vector<uint64_t> want;
  for (const auto& r : records) want.push_back(r.ino * 2 + r.fs);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(taken, want);
}

// The same on one filesystem, whose records are reordered in place to find the cut.
TEST(QuietTest, OneFilesystemsRecordsThatDoNotFitAreJudgedInLaterPasses) {
  test::TempDir dir;
  std::vector<FileEntry> records;
  for (uint64_t ino : {309, 300, 305, 302, 308, 301, 307, 303, 306, 304, 311, 310}) records.push_back(Record(ino));
  test::WriteIndex(dir.Join("prev.idx"), OneFs(kBegan + 44), records, 3);
  QuietRecords q;
  q.Want(0);
  std::vector<uint64_t> taken;
  int passes = 0;
  for (uint64_t from = 0; from != UINT64_MAX; ++passes) {
    ASSERT_LT(passes, 14);
    uint64_t upto = 0;
    ASSERT_OK(q.Load(dir.Join("prev.idx"), kBegan + 44, 4 * 24, from, &upto));
    ASSERT_GT(upto, from);
    size_t held = 0;
    for (uint64_t ino = 290; ino < 320; ++ino) {
      ChangedInode c = Items(ino);
      if (!q.Take(0, c)) continue;
      EXPECT_GE(ino, from);
      EXPECT_LT(ino, upto);
      taken.push_back(ino);
      ++held;
    }
    EXPECT_LE(held, 4u);
    from = upto;
  }
  EXPECT_GT(passes, 2);
  EXPECT_EQ(taken, (std::vector<uint64_t>{300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311}));
}

// An index that holds more records of one inode number than memory: damaged, refused,
// and the reading ends there.
TEST(QuietTest, MoreRecordsOfOneInodeThanFitAreRefused) {
  test::TempDir dir;
  const IndexHeader h = OneFs(kBegan + 44);
  std::vector<FileEntry> records = Links(300, 6);
  records.push_back(Record(301));
  test::WriteIndex(dir.Join("prev.idx"), h, records);
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  EXPECT_EQ(q.Load(dir.Join("prev.idx"), kBegan + 44, 4 * 24, 0, &upto).message(),
            "more records of inode 300 than --memory holds");
  // From above that number, the rest is read.
  ASSERT_TRUE(q.Load(dir.Join("prev.idx"), kBegan + 44, 4 * 24, 301, &upto).ok());
  EXPECT_EQ(upto, UINT64_MAX);
  ChangedInode c = Items(301);
  EXPECT_TRUE(q.Take(0, c));
}

// Three quarters of the records or more of the lowest number: that number's records
// make a pass of their own, and the higher numbers the next.
TEST(QuietTest, TheLowestNumbersRecordsMayMakeAPassOfTheirOwn) {
  test::TempDir dir;
  const IndexHeader h = OneFs(kBegan + 44);
  std::vector<FileEntry> records = Links(300, 4);
  records.push_back(Record(302));
  records.push_back(Record(301));
  test::WriteIndex(dir.Join("prev.idx"), h, records);
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  ASSERT_TRUE(q.Load(dir.Join("prev.idx"), kBegan + 44, 4 * 24, 0, &upto).ok());
  EXPECT_EQ(upto, 301u);
  ChangedInode c300 = Items(300), c301 = Items(301);
  EXPECT_FALSE(q.Take(0, c300));  // four records: nothing certain
  EXPECT_FALSE(q.Take(0, c301));  // not in this pass
  ASSERT_TRUE(q.Load(dir.Join("prev.idx"), kBegan + 44, 4 * 24, upto, &upto).ok());
  EXPECT_EQ(upto, UINT64_MAX);
  ChangedInode c302 = Items(302);
  c301 = Items(301);
  EXPECT_TRUE(q.Take(0, c301));
  EXPECT_TRUE(q.Take(0, c302));
}

// The moved files stay until the records are carried: the next pass's records get what
// they leave of the share, a quarter of it at least.
TEST(QuietTest, MovedFilesTakeTheNextPassesRoom) {
  test::TempDir dir;
  QuietRecords q;
  ASSERT_NO_FATAL_FAILURE(LoadRecords(dir, 300, 400, &q));
  const uint64_t share = 8 << 20;
  EXPECT_EQ(q.PassRoom(share), share);
  for (uint64_t ino = 300; ino < 400; ++ino) {
    ChangedInode c = Items(ino);
    c.map.extents[0].physical = (ino + 1) << 20;
    ASSERT_TRUE(q.Take(0, c)) << ino;
  }
  // Each a number and place (16 bytes), then its flags and one extent encoded (5 to 40).
  EXPECT_LE(q.PassRoom(share), share - 100 * (16 + 5));
  EXPECT_GE(q.PassRoom(share), share - 100 * (16 + 40));
  EXPECT_EQ(q.PassRoom(2048), 512u);  // they hold more than the share
}

// A record whose ctime lies within a second before its scan began may share it with a
// write made after it was read: racy, it is looked at, not taken.
TEST(QuietTest, ARacyRecordIsNotTaken) {
  for (int64_t began : {7 + kRacyNs, 8 + kRacyNs}) {
    test::TempDir dir;
    IndexHeader h;
    h.created_ns = began;
    h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
    test::WriteIndex(dir.Join("prev.idx"), h, {Record(300)});
    QuietRecords q;
    q.Want(0);
    uint64_t upto = 0;
    ASSERT_TRUE(q.Load(dir.Join("prev.idx"), began, 1 << 20, 0, &upto).ok());
    ChangedInode same = Items(300);
    EXPECT_EQ(q.Take(0, same), began == 8 + kRacyNs) << began;
  }
}

TEST(QuietTest, TwoRecordsOfOneInodeSayNothingCertain) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 45;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
  FileEntry again = Record(300);
  again.path = "/t/other";
  test::WriteIndex(dir.Join("prev.idx"), h, {Record(300), again});
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  ASSERT_TRUE(q.Load(dir.Join("prev.idx"), kBegan + 45, 1 << 20, 0, &upto).ok());
  ChangedInode same = Items(300);
  EXPECT_FALSE(q.Take(0, same));

  // One of the two racy: still two records.
  FileEntry racy = again;
  racy.ctime_ns = h.created_ns - 10;
  test::WriteIndex(dir.Join("racy.idx"), h, {Record(300), racy});
  QuietRecords r;
  r.Want(0);
  ASSERT_TRUE(r.Load(dir.Join("racy.idx"), kBegan + 45, 1 << 20, 0, &upto).ok());
  ChangedInode also = Items(300);
  EXPECT_FALSE(r.Take(0, also));
}

// Where a judge in slices cuts: about as many records in each slice, none of fewer
// than 4,096; and many threads taking moved files at once lose none.
TEST(QuietTest, SplitsCutTheRecordsEvenlyAndTakeServesManyThreads) {
  test::TempDir dir;
  IndexHeader h;
  h.created_ns = kBegan + 42;
  h.filesystems = {test::BtrfsFs("u", 5, 40, "/")};
  std::vector<FileEntry> records;
  for (uint64_t ino = 1000; ino < 1000 + 3 * 4096; ++ino) records.push_back(Record(ino));
  test::WriteIndex(dir.Join("prev.idx"), h, records, 1024);
  QuietRecords q;
  q.Want(0);
  uint64_t upto = 0;
  ASSERT_TRUE(q.Load(dir.Join("prev.idx"), kBegan + 42, 1 << 30, 0, &upto).ok());
  ASSERT_EQ(upto, UINT64_MAX);
  EXPECT_EQ(q.Splits(0, 1), std::vector<uint64_t>{});
  EXPECT_EQ(q.Splits(0, 2), (std::vector<uint64_t>{1000 + 3 * 4096 / 2}));
  EXPECT_EQ(q.Splits(0, 3), (std::vector<uint64_t>{1000 + 4096, 1000 + 2 * 4096}));
  EXPECT_EQ(q.Splits(0, 8).size(), 2u);  // three slices of 4,096 at most
  EXPECT_EQ(q.Splits(1, 4), std::vector<uint64_t>{});  // not wanted
  // A part of the numbers (a judge's part): its records alone are cut.
  EXPECT_EQ(q.Splits(0, 2, 1000 + 4096, 1000 + 3 * 4096), (std::vector<uint64_t>{1000 + 2 * 4096}));
  EXPECT_EQ(q.Splits(0, 2, 1000 + 4096, 1000 + 2 * 4096), std::vector<uint64_t>{});  // 4,096 records: one slice
  EXPECT_EQ(q.Splits(0, 2, 5000, 1000 + 3 * 4096), (std::vector<uint64_t>{5000 + (1000 + 3 * 4096 - 5000) / 2}));

  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&q, t] {
      for (uint64_t ino = 1000 + uint64_t(t); ino < 1000 + 3 * 4096; ino += 4) {
        ChangedInode c = Items(ino);
        c.map.extents[0].physical = 8 << 20;
        EXPECT_TRUE(q.Take(0, c));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(q.moved(), 3u * 4096);
  q.Done();
  for (uint64_t ino = 1000; ino < 1000 + 3 * 4096; ++ino) ASSERT_TRUE(q.Moved(0, ino)) << ino;
}

// Moved files' extents are kept one after another in shared chunks: each file gets its
// own back, whether it has one extent, enough to cross into a new chunk, or more than a
// chunk holds.
TEST(QuietTest, MovedExtentsComeBackEachFilesOwn) {
  test::TempDir dir;
  QuietRecords q;
  ASSERT_NO_FATAL_FAILURE(LoadRecords(dir, 300, 340, &q));
  // The same size in as many extents as `n`, numbered by the inode.
  auto moved = [](uint64_t ino, size_t n) {
    ChangedInode c = Items(ino);
    c.map.extents.clear();
    for (size_t k = 0; k < n; ++k)
      c.map.extents.push_back({k * 4096, (ino << 32) + k * 4096, k + 1 == n ? 10000 - k * 4096 : 4096, 0});
    return c;
  };
  // Records say 10000 bytes; the digest of the stat does not look at the extents' sizes.
  const std::vector<size_t> counts = {1, 100000, 150000, 1, 300000, 2};  // 300000: more than a chunk
  for (size_t i = 0; i < counts.size(); ++i) {
    ChangedInode c = moved(339 - i, counts[i]);  // taken out of inode order
    ASSERT_TRUE(q.Take(0, c)) << i;
  }
  q.Done();
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint64_t ino = 339 - i;
    const auto m = q.Moved(0, ino);
    ASSERT_TRUE(m) << ino;
    ASSERT_EQ(m->extents.size(), counts[i]) << ino;
    EXPECT_EQ(m->extents.front().physical, ino << 32) << ino;
    EXPECT_EQ(m->extents.back().physical, (ino << 32) + (counts[i] - 1) * 4096) << ino;
  }
  EXPECT_FALSE(q.Moved(0, 300));
}

}  // namespace
}  // namespace oans
