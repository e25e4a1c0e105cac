// The scan's --previous index (lib/scan/previous.h): what it gives back is what the
// index held, whether its records stay in memory or go to the temporary file past the
// memory budget; a later record of an inode wins; a changed file gets nothing.
#include "lib/scan/previous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "lib/format/index_file.h"
#include "lib/scan/hasher.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

constexpr uint32_t kBs = 128 * 1024;

FsRecord Fs() { return test::BtrfsFs("U", 5, 40, "/r"); }

// A file with `sectors` sums, a block hash per 32 sectors and an extent per 8, all
// derived from `seed`.
FileEntry File(uint64_t ino, uint32_t seed, size_t sectors) {
  std::mt19937 rng(seed);
  FileEntry e;
  e.path = "/r/f" + std::to_string(ino) + "." + std::to_string(seed);
  e.dev = 40;
  e.ino = ino;
  e.size = sectors * 4096;
  e.mtime_ns = 1000 + seed;
  e.ctime_ns = 2000 + seed;
  e.nlink = 1;
  e.inode_flags = seed;
  e.hashed = true;
  e.sum_kind = e.key_kind = 1;
  for (size_t s = 0; s < sectors; ++s) {
    const uint32_t v = rng();
    e.sector_sums.append(reinterpret_cast<const char*>(&v), 4);
  }
  e.hash = HashBytes(e.sector_sums.data(), e.sector_sums.size());
  for (size_t at = 0; at < e.sector_sums.size(); at += 128)
    e.block_hashes.push_back(HashBytes(e.sector_sums.data() + at, std::min<size_t>(128, e.sector_sums.size() - at)));
  for (uint64_t at = 0; at < e.size; at += 8 * 4096)
    e.extents.push_back({at, (uint64_t(seed) << 24) + at * 3, std::min<uint64_t>(8 * 4096, e.size - at), 0});
  e.extents.back().flags = kExtentLast;
  return e;
}

// When the previous scan began: long after every File's ctime, unless told.
constexpr int64_t kBegan = 10'000'000'000;

void WriteIndex(const std::string& path, const std::vector<FileEntry>& files, int64_t began = kBegan) {
  IndexHeader h;
  h.created_ns = began;
  h.roots = {"/r"};
  h.filesystems = {Fs()};
  h.block_size = kBs;
  h.hostname = "host";
  test::WriteIndex(path, h, files);
}

// What a walk knows of a file before reading it: its identity only.
FileEntry Stat(const FileEntry& f) {
  FileEntry e;
  e.path = f.path;
  e.dev = f.dev;
  e.ino = f.ino;
  e.size = f.size;
  e.mtime_ns = f.mtime_ns;
  e.ctime_ns = f.ctime_ns;
  e.nlink = f.nlink;
  return e;
}

void ExpectSame(const FileEntry& got, const FileEntry& want, bool extents) {
  EXPECT_TRUE(got.hashed);
  EXPECT_TRUE(got.reused);
  EXPECT_EQ(got.hash, want.hash);
  EXPECT_EQ(got.block_hashes, want.block_hashes);
  EXPECT_EQ(got.sector_sums, want.sector_sums);
  EXPECT_EQ(got.sum_kind, want.sum_kind);
  EXPECT_EQ(got.key_kind, want.key_kind);
  if (!extents) {
    EXPECT_TRUE(got.extents.empty());
    return;
  }
  EXPECT_EQ(got.inode_flags, want.inode_flags);
  test::ExpectSameExtents(got.extents, want.extents);
}

TEST(PreviousIndex, SameAnswersInMemoryAndPastTheBudget) {
  TempDir dir;
  std::vector<FileEntry> files;
  for (uint64_t ino = 256; ino < 256 + 600; ++ino) files.push_back(File(ino, uint32_t(ino * 7), 1 + ino % 90));
  // Inode 300 again, later in the index, with other content: the later record wins.
  const FileEntry again = File(300, 4242, 40);
  files.push_back(again);
  const std::string path = dir.Join("prev.idx");
  WriteIndex(path, files);

  for (uint64_t memory : {uint64_t(1) << 30, uint64_t(4096)}) {
    SCOPED_TRACE("memory " + std::to_string(memory));
    PreviousIndex prev(dir.path(), memory);
    ScanStats stats;
    Observer quiet;
    ASSERT_OK(prev.Load(path, kBs, false, &stats, &quiet));
    EXPECT_EQ(prev.spilled(), memory == 4096);  // 600 records of up to 2 KiB: past 4 KiB
    EXPECT_EQ(stats.previous_files, 600u);
    for (size_t i = 0; i < files.size(); ++i) {
      const FileEntry& want = files[i].ino == 300 ? again : files[i];
      SCOPED_TRACE(want.path);
      FileEntry e = Stat(want);
      ASSERT_TRUE(prev.Reuse(Fs().Key(), &e));
      ExpectSame(e, want, false);
      // Unopened: only with btrfs saying the extents are unchanged (not inline data).
      FileEntry u = Stat(want);
      EXPECT_FALSE(prev.MayFinishUnopened(Fs().Key(), want.ino, false));
      EXPECT_FALSE(prev.Reuse(Fs().Key(), &u, true, false));
      EXPECT_TRUE(prev.MayFinishUnopened(Fs().Key(), want.ino, true));
      ASSERT_TRUE(prev.Reuse(Fs().Key(), &u, true, true));
      ExpectSame(u, want, true);
    }
    // The older record of inode 300 is gone, a changed file gets nothing, nor does an
    // unknown inode or filesystem.
    FileEntry old = Stat(files[300 - 256]);
    EXPECT_FALSE(prev.Reuse(Fs().Key(), &old));
    FileEntry changed = Stat(files[10]);
    changed.ctime_ns += 1;
    EXPECT_FALSE(prev.Reuse(Fs().Key(), &changed));
    EXPECT_FALSE(changed.hashed);
    FileEntry unknown = Stat(files[10]);
    unknown.ino = 100000;
    EXPECT_FALSE(prev.Reuse(Fs().Key(), &unknown));
    FileEntry elsewhere = Stat(files[10]);
    EXPECT_FALSE(prev.Reuse("other", &elsewhere));
    // Inode slices cut this filesystem's 600 inodes into parts of about equal count.
    EXPECT_EQ(prev.InodeSlices(Fs().Key(), 3, 256, 855), (std::vector<uint64_t>{256, 456, 656, 856}));
  }
}

// Walkers and readers look records up at once: every thread gets every record whole.
// A record whose ctime lies within a second before its scan began (or after) is racy:
// a write in the same clock tick after it was read would leave the times recorded. Its
// hashes are not reused; the file is read again.
TEST(PreviousIndex, ARacyRecordIsNotReused) {
  TempDir dir;
  const FileEntry f = File(300, 5, 40);
  for (int64_t began : {f.ctime_ns + kRacyNs, f.ctime_ns + kRacyNs + 1}) {
    const std::string path = dir.Join("prev" + std::to_string(began) + ".idx");
    WriteIndex(path, {f}, began);
    PreviousIndex prev(dir.path());
    ScanStats stats;
    Observer quiet;
    ASSERT_OK(prev.Load(path, kBs, false, &stats, &quiet));
    FileEntry e = Stat(f);
    EXPECT_EQ(prev.Reuse(Fs().Key(), &e), began > f.ctime_ns + kRacyNs) << began;
  }
}

TEST(PreviousIndex, ManyThreadsReadSpilledRecordsAtOnce) {
  TempDir dir;
  std::vector<FileEntry> files;
  for (uint64_t ino = 256; ino < 256 + 2000; ++ino) files.push_back(File(ino, uint32_t(ino), 1 + ino % 300));
  const std::string path = dir.Join("prev.idx");
  WriteIndex(path, files);
  PreviousIndex prev(dir.path(), 4096);
  ScanStats stats;
  Observer quiet;
  ASSERT_OK(prev.Load(path, kBs, false, &stats, &quiet));
  ASSERT_TRUE(prev.spilled());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < files.size(); ++k) {
        const FileEntry& want = files[(k * 7 + size_t(t) * 131) % files.size()];
        FileEntry e = Stat(want);
        if (!prev.Reuse(Fs().Key(), &e, true, true) || e.hash != want.hash || e.block_hashes != want.block_hashes ||
            e.sector_sums != want.sector_sums || e.extents.size() != want.extents.size())
          wrong++;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(prev.unreadable(), 0u);
}

// A record paired by size is never reused (it holds no keys). HoldsUnchanged says the
// index holds the file, paired or read, while it keeps its identity, in memory and past
// the budget alike.
TEST(PreviousIndex, PairedRecordsAreKnownNeverReused) {
  TempDir dir;
  FileEntry read = File(256, 1, 4);
  FileEntry paired = Stat(File(257, 2, 4));
  paired.size_paired = true;
  paired.extents = File(257, 2, 4).extents;
  const std::string path = dir.Join("prev.idx");
  WriteIndex(path, {read, paired});
  for (uint64_t memory : {uint64_t(1) << 30, uint64_t(64)}) {
    SCOPED_TRACE("memory " + std::to_string(memory));
    PreviousIndex prev(dir.path(), memory);
    ScanStats stats;
    Observer quiet;
    ASSERT_OK(prev.Load(path, kBs, false, &stats, &quiet));
    FileEntry e = Stat(paired);
    EXPECT_TRUE(prev.HoldsUnchanged(Fs().Key(), e));
    EXPECT_FALSE(prev.Reuse(Fs().Key(), &e));
    EXPECT_FALSE(prev.Reuse(Fs().Key(), &e, true, true));
    EXPECT_FALSE(prev.MayFinishUnopened(Fs().Key(), paired.ino, true));
    EXPECT_FALSE(e.hashed);
    // Changed since: not the pair planned before.
    FileEntry changed = Stat(paired);
    changed.mtime_ns += 1;
    EXPECT_FALSE(prev.HoldsUnchanged(Fs().Key(), changed));
    // A read record is held too, not once changed; an unknown inode or filesystem is not.
    EXPECT_TRUE(prev.HoldsUnchanged(Fs().Key(), Stat(read)));
    FileEntry read_changed = Stat(read);
    read_changed.ctime_ns += 1;
    EXPECT_FALSE(prev.HoldsUnchanged(Fs().Key(), read_changed));
    FileEntry other = Stat(paired);
    other.ino = 999;
    EXPECT_FALSE(prev.HoldsUnchanged(Fs().Key(), other));
    EXPECT_FALSE(prev.HoldsUnchanged("elsewhere", Stat(paired)));
  }
}

}  // namespace
}  // namespace oans
