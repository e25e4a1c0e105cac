// The --since stage (lib/plan/since.h): a merge join of the old index's files and the
// loaded ones by (filesystem UUID, subvolume, inode).
#include "lib/plan/since.h"

#include <gtest/gtest.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

FsRecord Fs(const std::string& uuid, uint64_t subvolume, uint64_t dev) { return test::BtrfsFs(uuid, subvolume, dev, ""); }

FileEntry File(const std::string& path, uint32_t fs, uint64_t dev, uint64_t ino, int64_t mtime) {
  FileEntry e;
  e.path = path;
  e.fs = fs;
  e.dev = dev;
  e.ino = ino;
  e.size = 8192;
  e.mtime_ns = e.ctime_ns = mtime;
  e.nlink = 1;
  e.hashed = true;
  e.block_hashes = {{1, 2}};  // one block: every size here is below the block size
  return e;
}

TEST(Since, UnchangedFilesAreFoundByUuidSubvolumeAndInodeWhateverTheirDev) {
  TempDir dir;
  IndexHeader h;
  h.roots = {"/r"};
  // Before: subvolumes 5 and 256 of U as devices 40 and 41; b's first entry is replaced
  // by a later one (the last wins).
  h.filesystems = {Fs("U", 5, 40), Fs("U", 256, 41)};
  test::WriteIndex(dir.Join("old.idx"), h,
                   {File("/r/a", 0, 40, 1, 100), File("/r/b", 0, 40, 2, 1), File("/r/b", 0, 40, 2, 200),
                    File("/r/c", 1, 41, 1, 300), File("/r/e", 0, 40, 9, 900)});
  FilesystemIds ids;
  SinceJoin since(dir.path(), 1 << 20);
  bool truncated = true;
  ASSERT_OK(since.LoadOld(dir.Join("old.idx"), &ids, &truncated));
  EXPECT_FALSE(truncated);
  // Now, after a remount: other device numbers, and the subvolumes listed the other way.
  const std::vector<uint32_t> now = ids.Of({Fs("U", 256, 77), Fs("U", 5, 76), Fs("V", 5, 76)});
  struct Loaded {
    uint32_t fs;
    uint64_t ino;
    int64_t mtime;
  };
  const std::vector<Loaded> files = {
      {1, 1, 100},  // a: unchanged
      {1, 2, 200},  // b: as its last entry before
      {0, 1, 301},  // c: modified
      {1, 3, 400},  // d: new
      {2, 1, 100},  // another filesystem's inode 1: new
  };
  std::vector<bool> changed(files.size(), true);
  for (uint32_t id = 0; id < files.size(); ++id) {
    FileEntry e = File("/r/x", 0, 0, files[id].ino, files[id].mtime);
    ASSERT_OK(since.AddNew(now[files[id].fs], files[id].ino, id, FileIdentity::Of(e)));
  }
  ASSERT_OK(since.MarkUnchanged(&changed));
  EXPECT_EQ(changed, (std::vector<bool>{false, false, true, true, true}));
}

TEST(Since, AMissingOldIndexIsNamed) {
  TempDir dir;
  FilesystemIds ids;
  SinceJoin since(dir.path(), 1 << 20);
  bool truncated = false;
  Status st = since.LoadOld(dir.Join("nope.idx"), &ids, &truncated);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--since"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("nope.idx"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace oans
