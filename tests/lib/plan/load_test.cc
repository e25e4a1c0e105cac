// The load stage (lib/plan/load.h): indexes -> details and keys, filesystems merged by
// (UUID, subvolume), unusable files counted and left out.
#include "lib/plan/load.h"

#include <gtest/gtest.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

constexpr uint64_t kBs = 128 * 1024;

FsRecord Fs(const std::string& uuid, uint64_t subvolume, uint64_t dev) {
  FsRecord f;
  f.uuid = uuid;
  f.subvolume = subvolume;
  f.dev = dev;
  f.block_size = 4096;
  return f;
}

FileEntry File(uint32_t fs, uint64_t ino, uint64_t blocks, uint32_t extent_flags = 0) {
  FileEntry e;
  e.path = "/r/" + std::to_string(ino);
  e.fs = fs;
  e.dev = 40 + fs;
  e.ino = ino;
  e.size = blocks * kBs;
  e.mtime_ns = e.ctime_ns = 1;
  e.nlink = 1;
  e.hashed = true;
  e.hash = {ino, 1};
  for (uint64_t b = 0; b < blocks; ++b) e.block_hashes.push_back({ino, b});
  e.extents = {{0, ino << 30, blocks * kBs, extent_flags | kExtentLast}};
  return e;
}

IndexHeader Header(std::vector<FsRecord> filesystems) {
  IndexHeader h;
  h.roots = {"/r"};
  h.filesystems = std::move(filesystems);
  h.block_size = kBs;
  return h;
}

TEST(Load, FilesKeysAndFilesystemsOfTwoIndexes) {
  TempDir dir;
  FileEntry unreadable = File(0, 5, 1);
  unreadable.error = "EIO";
  unreadable.hashed = false;
  test::WriteIndex(dir.Join("a.idx"), Header({Fs("U", 5, 40), Fs("U", 256, 41)}),
                   {File(0, 1, 2), File(1, 2, 3), unreadable, File(0, 6, 1, kExtentInline)});
  // The second index: U's subvolume 256 again (another dev), and V.
  FileEntry again = File(1, 2, 3);
  again.dev = 51;
  test::WriteIndex(dir.Join("b.idx"), Header({Fs("V", 5, 50), Fs("U", 256, 51)}), {File(0, 3, 1), again});
  PlanOptions o;
  o.indexes = {dir.Join("a.idx"), dir.Join("b.idx")};
  o.temp_dir = dir.path();
  Observer quiet;
  PlanStats stats;
  PlanState st(o, &quiet, &stats);
  ASSERT_OK(LoadIndexes(st));
  EXPECT_EQ(st.details.size(), 4u);  // 1, 2, 3 and 2 again
  EXPECT_EQ(stats.skipped_errors, 1u);
  EXPECT_EQ(stats.skipped_inline, 1u);
  EXPECT_EQ(stats.filesystems, 2u);           // U and V pair apart
  EXPECT_EQ(st.header.filesystems.size(), 3u);  // U/5, U/256, V/5
  EXPECT_EQ(st.header.indexes.size(), 2u);
  EXPECT_EQ(st.whole.size(), 4u);
  EXPECT_EQ(st.blocks.size(), 2u + 3 + 1 + 3);
  EXPECT_EQ(st.inodes.size(), 4u);  // from the second section on, every file
  EXPECT_EQ(st.changed, (std::vector<bool>(4, true)));
  auto d = st.details.Get(3);
  ASSERT_OK(d.status());
  EXPECT_EQ((*d)->fs, 1u);   // U/256, whatever its dev in b.idx
  EXPECT_EQ((*d)->dev, 51u);  // kept as scanned, for the plan
}

TEST(Load, ADifferentBlockSizeNamesTheIndex) {
  TempDir dir;
  test::WriteIndex(dir.Join("a.idx"), Header({Fs("U", 5, 40)}), {File(0, 1, 1)});
  IndexHeader h = Header({Fs("U", 5, 40)});
  h.block_size = 64 * 1024;
  test::WriteIndex(dir.Join("b.idx"), h, {});
  PlanOptions o;
  o.indexes = {dir.Join("a.idx"), dir.Join("b.idx")};
  o.temp_dir = dir.path();
  Observer quiet;
  PlanStats stats;
  PlanState st(o, &quiet, &stats);
  EXPECT_TRUE(test::StatusIs(LoadIndexes(st), Status::Code::kInvalidArgument, "b.idx was scanned with --block-size"));
}

}  // namespace
}  // namespace oans
