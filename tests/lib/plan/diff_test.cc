// oans-diff's library (lib/plan/diff.h): a merge join of two indexes by (filesystem UUID,
// subvolume, inode), in memory and spilled.
#include "lib/plan/diff.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

FileEntry File(const std::string& path, uint64_t dev, uint64_t ino, uint64_t size, int64_t time) {
  FileEntry e;
  e.path = path;
  e.dev = dev;
  e.ino = ino;
  e.size = size;
  e.mtime_ns = e.ctime_ns = time;
  e.nlink = 1;
  e.hashed = true;
  e.block_hashes = {{1, 2}};  // one block: every size here is below the block size
  return e;
}

IndexHeader Header(uint64_t dev) {
  IndexHeader h;
  h.roots = {"/r"};
  FsRecord f;
  f.uuid = "U";
  f.subvolume = 5;
  f.dev = dev;
  h.filesystems = {f};
  return h;
}

using Seen = std::set<std::tuple<std::string, std::string, std::string>>;  // kind, path, old path

Seen Diff(const std::string& a, const std::string& b, DiffStats* s, uint64_t memory, const std::string& tmp) {
  Seen seen;
  EXPECT_OK(DiffIndexes(a, b, [&](const DiffEntry& e) { seen.insert({DiffKindName(e.kind), e.path, e.old_path}); },
                        s, memory, tmp));
  return seen;
}

TEST(Diff, AddedRemovedChangedRenamedInMemoryAndSpilled) {
  TempDir dir;
  std::vector<FileEntry> before, after;
  for (uint64_t i = 0; i < 3000; ++i) before.push_back(File("/r/f" + std::to_string(i), 40, 100 + i, 10, 1));
  after = before;
  for (auto& e : after) e.dev = 41;  // remounted: another device number, the same files
  after[5].mtime_ns = 2;                              // changed
  after[6].path = "/r/moved";                         // renamed
  after[7].path = "/r/both";                          // renamed and changed
  after[7].size = 11;
  after.erase(after.begin() + 8);                     // removed
  after.push_back(File("/r/new", 41, 99999, 5, 3));   // added
  FileEntry unreadable = File("/r/unreadable", 41, 5000, 1, 1);
  unreadable.error = "EACCES";
  after.push_back(unreadable);                        // not counted
  test::WriteIndex(dir.Join("a.idx"), Header(40), before, 500);
  test::WriteIndex(dir.Join("b.idx"), Header(41), after, 500);
  const Seen want = {{"changed", "/r/f5", ""},   {"renamed", "/r/moved", "/r/f6"}, {"renamed", "/r/both", "/r/f7"},
                     {"changed", "/r/both", ""}, {"removed", "/r/f8", ""},          {"added", "/r/new", ""}};
  for (uint64_t memory : {uint64_t(256) << 20, uint64_t(64) << 10}) {  // the second spills every side
    DiffStats s;
    EXPECT_EQ(Diff(dir.Join("a.idx"), dir.Join("b.idx"), &s, memory, dir.path()), want);
    EXPECT_EQ(s.added, 1u);
    EXPECT_EQ(s.removed, 1u);
    EXPECT_EQ(s.changed, 2u);
    EXPECT_EQ(s.renamed, 2u);
    EXPECT_EQ(s.unchanged, 2996u);  // 2999 in both, 3 of them changed or renamed
  }
}

TEST(Diff, ADamagedIndexIsAnError) {
  TempDir dir;
  test::WriteIndex(dir.Join("a.idx"), Header(40), {File("/r/a", 40, 1, 1, 1)});
  test::WriteFile(dir.Join("bad.idx"), "not an index");
  DiffStats s;
  Status st = DiffIndexes(dir.Join("a.idx"), dir.Join("bad.idx"), [](const DiffEntry&) {}, &s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("bad.idx"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace oans
