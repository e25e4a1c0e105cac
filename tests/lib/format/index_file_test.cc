#include "lib/format/index_file.h"

#include <capnp/message.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstring>

#include "format/index.capnp.h"
#include "lib/format/frame_stream.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

IndexHeader SampleHeader() {
  IndexHeader h;
  h.tool_version = "0.1.0-test";
  h.created_ns = 1700000000123456789;
  h.roots = {"/data", "/home/\xFFuser"};
  FsRecord a;
  a.uuid = "11111111-2222-3333-4444-555555555555";
  a.subvolume = 5;
  a.dev = 0x801;
  a.type = "btrfs";
  a.block_size = 4096;
  a.mount_point = "/data";
  FsRecord b = a;
  b.subvolume = 257;
  b.dev = 0x802;
  b.mount_point = "/home";
  h.filesystems = {a, b};
  h.block_size = 64 * 1024;
  h.min_size = 100;
  h.excludes = {"*.tmp", "/data/cache/*"};
  h.hostname = "testhost";
  h.command_line = {"oans-scan", "-o", "x.idx", "/data"};
  return h;
}

// A record whose block hashes agree with its size at block size bs.
FileEntry SampleEntry(uint64_t i, uint32_t bs) {
  FileEntry e;
  e.path = "/data/dir" + std::to_string(i % 7) + "/file" + std::to_string(i);
  if (i % 5 == 0) e.path += "\nwith newline";
  if (i % 6 == 0) e.path += "\xFF\xFE invalid utf8";
  e.fs = uint32_t(i % 2);
  e.dev = 0x801 + i % 2;
  e.ino = 1000 + i;
  e.size = 1 + i * 12345;
  e.mtime_ns = 1600000000000000000 + int64_t(i);
  e.ctime_ns = 1600000000000000001 + int64_t(i);
  e.nlink = 1 + uint32_t(i % 3);
  e.inode_flags = i % 4 == 0 ? 0x800000 : 0;
  for (uint64_t x = 0; x < i % 4; ++x)
    e.extents.push_back({x * 8192, 1000000 + i * 100000 + x * 8192, 8192, uint32_t(x + 1 == i % 4 ? 0x1 : 0x2000)});
  if (i % 9 == 3) {
    e.error = "open: Permission denied";
    e.errnum = 13;
  } else {
    e.hashed = true;
    e.reused = i % 2 == 1;
    e.hash = {i * 7 + 1, i * 11 + 2};
    for (uint64_t b = 0; b < (e.size + bs - 1) / bs; ++b) e.block_hashes.push_back({i, b});
  }
  if (i % 8 == 0) e.other_paths = {"/data/link" + std::to_string(i), "/data/\nlink2"};
  return e;
}

void ExpectSameEntry(const FileEntry& a, const FileEntry& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.fs, b.fs);
  EXPECT_EQ(a.dev, b.dev);
  EXPECT_EQ(a.ino, b.ino);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.mtime_ns, b.mtime_ns);
  EXPECT_EQ(a.ctime_ns, b.ctime_ns);
  EXPECT_EQ(a.nlink, b.nlink);
  EXPECT_EQ(a.inode_flags, b.inode_flags);
  ASSERT_EQ(a.extents.size(), b.extents.size());
  for (size_t i = 0; i < a.extents.size(); ++i) {
    EXPECT_EQ(a.extents[i].logical, b.extents[i].logical);
    EXPECT_EQ(a.extents[i].physical, b.extents[i].physical);
    EXPECT_EQ(a.extents[i].length, b.extents[i].length);
    EXPECT_EQ(a.extents[i].flags, b.extents[i].flags);
  }
  EXPECT_EQ(a.hashed, b.hashed);
  EXPECT_EQ(a.reused, b.reused);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.block_hashes, b.block_hashes);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.errnum, b.errnum);
  EXPECT_EQ(a.other_paths, b.other_paths);
}

TEST(IndexFile, RoundTrip) {
  TempDir dir;
  const IndexHeader h = SampleHeader();
  std::vector<FileEntry> files;
  for (uint64_t i = 0; i < 1000; ++i) files.push_back(SampleEntry(i, h.block_size));
  const std::string path = dir.Join("a.idx");
  test::WriteIndex(path, h, files, 64);

  int headers = 0;
  std::vector<size_t> batch_sizes;
  std::vector<FileEntry> got;
  IndexHeader got_header;
  auto r = ReadIndex(
      path, {},
      [&](const IndexHeader& hh) {
        ++headers;
        got_header = hh;
        return Status::Ok();
      },
      [&](const IndexHeader&, std::vector<FileEntry>& b) {
        batch_sizes.push_back(b.size());
        for (auto& e : b) got.push_back(std::move(e));
        return Status::Ok();
      });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(r->sections, 1);
  EXPECT_FALSE(r->truncated);
  EXPECT_EQ(r->totals.records, 1000u);
  EXPECT_EQ(r->totals.batches, 16u);  // 15 of 64 and one of 40
  EXPECT_EQ(batch_sizes.size(), 16u);
  for (size_t i = 0; i + 1 < batch_sizes.size(); ++i) EXPECT_EQ(batch_sizes[i], 64u);
  uint64_t errors = 0, bytes = 0;
  for (const auto& f : files) {
    errors += !f.error.empty();
    bytes += f.size;
  }
  EXPECT_EQ(r->totals.errors, errors);
  EXPECT_EQ(r->totals.bytes, bytes);

  EXPECT_EQ(got_header.format_version, kIndexFormatVersion);
  EXPECT_EQ(got_header.tool_version, h.tool_version);
  EXPECT_EQ(got_header.created_ns, h.created_ns);
  EXPECT_EQ(got_header.roots, h.roots);
  ASSERT_EQ(got_header.filesystems.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got_header.filesystems[i].uuid, h.filesystems[i].uuid);
    EXPECT_EQ(got_header.filesystems[i].subvolume, h.filesystems[i].subvolume);
    EXPECT_EQ(got_header.filesystems[i].dev, h.filesystems[i].dev);
    EXPECT_EQ(got_header.filesystems[i].type, h.filesystems[i].type);
    EXPECT_EQ(got_header.filesystems[i].block_size, h.filesystems[i].block_size);
    EXPECT_EQ(got_header.filesystems[i].mount_point, h.filesystems[i].mount_point);
    EXPECT_EQ(got_header.filesystems[i].Key(), h.filesystems[i].Key());
  }
  EXPECT_NE(got_header.filesystems[0].Key(), got_header.filesystems[1].Key());
  EXPECT_EQ(got_header.block_size, h.block_size);
  EXPECT_EQ(got_header.min_size, h.min_size);
  EXPECT_EQ(got_header.excludes, h.excludes);
  EXPECT_EQ(got_header.hostname, h.hostname);
  EXPECT_EQ(got_header.command_line, h.command_line);

  ASSERT_EQ(got.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameEntry(got[i], files[i]);
  }
}

TEST(IndexFile, WriterTotals) {
  TempDir dir;
  auto out = OutputFile::Open(dir.Join("t.idx"));
  ASSERT_TRUE(out.ok());
  IndexWriter w(out->get(), 3);
  ASSERT_OK(w.WriteHeader(SampleHeader()));
  for (uint64_t i = 0; i < 7; ++i) ASSERT_OK(w.Add(SampleEntry(i, 64 * 1024)));
  ASSERT_OK(w.Finish());
  EXPECT_EQ(w.totals().records, 7u);
  EXPECT_EQ(w.totals().batches, 3u);
  EXPECT_EQ(w.totals().errors, 1u);  // i == 3
  ASSERT_OK((*out)->Commit());
}

TEST(IndexFile, EmptyIndexHasNoRecords) {
  TempDir dir;
  test::WriteIndex(dir.Join("e.idx"), SampleHeader(), {});
  auto c = ReadIndexFile(dir.Join("e.idx"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->files.empty());
  EXPECT_EQ(c->result.totals.records, 0u);
  EXPECT_EQ(c->header.hostname, "testhost");
}

// Writes frames built by `fill` (one per call) and commits; for crafting damaged files.
void WriteFrames(const std::string& path, const std::vector<std::function<void(schema::IndexFrame::Builder)>>& fills) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok());
  FrameWriter fw((*out)->fd(), path);
  for (const auto& fill : fills) {
    capnp::MallocMessageBuilder msg;
    fill(msg.initRoot<schema::IndexFrame>());
    ASSERT_OK(fw.Write(msg));
  }
  ASSERT_OK((*out)->Commit());
}

void FillHeader(schema::IndexFrame::Builder f, const char* magic = kIndexMagic, uint32_t version = 1) {
  auto h = f.initHeader();
  h.setMagic(magic);
  h.setFormatVersion(version);
  h.setBlockSize(4096);
  auto fs = h.initFilesystems(1);
  fs[0].setUuid("u");
}

void FillBatch(schema::IndexFrame::Builder f, unsigned n) {
  auto files = f.initBatch().initFiles(n);
  for (unsigned i = 0; i < n; ++i) {
    files[i].setPath(kj::arrayPtr(reinterpret_cast<const kj::byte*>("/x"), 2));
    files[i].setSize(10);
    files[i].setIno(i + 1);
  }
}

void FillTrailer(schema::IndexFrame::Builder f, uint64_t records, uint64_t batches) {
  auto t = f.initTrailer();
  t.setRecords(records);
  t.setBatches(batches);
}

TEST(IndexFile, CraftedValidFileReads) {
  // Guards the crafting helpers used by the damage tests below.
  TempDir dir;
  WriteFrames(dir.Join("ok"), {[](auto f) { FillHeader(f); }, [](auto f) { FillBatch(f, 2); },
                               [](auto f) { FillTrailer(f, 2, 1); }});
  auto c = ReadIndexFile(dir.Join("ok"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->files.size(), 2u);
}

TEST(IndexFile, TrailerCountMismatchIsCorrupt) {
  TempDir dir;
  WriteFrames(dir.Join("bad"), {[](auto f) { FillHeader(f); }, [](auto f) { FillBatch(f, 2); },
                                [](auto f) { FillTrailer(f, 3, 1); }});
  auto c = ReadIndexFile(dir.Join("bad"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "trailer"));
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, dir.Join("bad")));
  // A batch count that disagrees is damage too.
  WriteFrames(dir.Join("bad2"), {[](auto f) { FillHeader(f); }, [](auto f) { FillBatch(f, 2); },
                                 [](auto f) { FillTrailer(f, 2, 2); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("bad2")).status(), Status::Code::kCorrupt, "trailer"));
}

TEST(IndexFile, StructureErrors) {
  TempDir dir;
  // Records before any header.
  WriteFrames(dir.Join("a"), {[](auto f) { FillBatch(f, 1); }, [](auto f) { FillTrailer(f, 1, 1); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("a")).status(), Status::Code::kCorrupt, "no header"));
  // Records after the trailer.
  WriteFrames(dir.Join("b"), {[](auto f) { FillHeader(f); }, [](auto f) { FillTrailer(f, 0, 0); },
                              [](auto f) { FillBatch(f, 1); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("b")).status(), Status::Code::kCorrupt, "after the trailer"));
  // A header in the middle.
  WriteFrames(dir.Join("c"), {[](auto f) { FillHeader(f); }, [](auto f) { FillBatch(f, 1); },
                              [](auto f) { FillHeader(f); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("c")).status(), Status::Code::kCorrupt, "header in the middle"));
  // A trailer without a header.
  WriteFrames(dir.Join("d"), {[](auto f) { FillTrailer(f, 0, 0); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("d")).status(), Status::Code::kCorrupt));
  // Block size 0 in the header.
  WriteFrames(dir.Join("e"), {[](auto f) {
                                FillHeader(f);
                                f.getHeader().setBlockSize(0);
                              },
                              [](auto f) { FillTrailer(f, 0, 0); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("e")).status(), Status::Code::kCorrupt, "block size"));
}

TEST(IndexFile, RecordWithUnknownFilesystemIsCorrupt) {
  TempDir dir;
  FileEntry e = SampleEntry(1, 64 * 1024);
  e.fs = 2;  // the header names two filesystems
  test::WriteIndex(dir.Join("x"), SampleHeader(), {e});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("x")).status(), Status::Code::kCorrupt, "unknown filesystem"));
}

TEST(IndexFile, BlockHashesDisagreeingWithSizeAreCorrupt) {
  TempDir dir;
  FileEntry e = SampleEntry(1, 64 * 1024);
  ASSERT_TRUE(e.hashed);
  e.block_hashes.push_back({1, 2});
  test::WriteIndex(dir.Join("x"), SampleHeader(), {e});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("x")).status(), Status::Code::kCorrupt, "block hashes"));
}

// A record paired by size (left unread) reads back as written; one that is also hashed,
// or failed, is damage.
TEST(IndexFile, SizePairedRecords) {
  TempDir dir;
  FileEntry e = SampleEntry(1, 64 * 1024);
  e.hashed = false;
  e.hash = {};
  e.block_hashes.clear();
  e.sector_sums.clear();
  e.sum_kind = e.key_kind = 0;
  e.size_paired = true;
  test::WriteIndex(dir.Join("ok"), SampleHeader(), {e});
  auto got = ReadIndexFile(dir.Join("ok"));
  ASSERT_OK(got.status());
  ASSERT_EQ(got->files.size(), 1u);
  EXPECT_TRUE(got->files[0].size_paired);
  EXPECT_FALSE(got->files[0].hashed);
  EXPECT_EQ(got->files[0].extents.size(), e.extents.size());
  FileEntry hashed = SampleEntry(1, 64 * 1024);
  hashed.size_paired = true;
  FileEntry failed = e;
  failed.error = "EIO";
  FileEntry keyed = e;  // keys without `hashed`
  keyed.hash = {1, 2};
  FileEntry summed = e;
  summed.sum_kind = 1;
  summed.sector_sums.assign((e.size + 4095) / 4096 * 4, 'x');
  for (const FileEntry& bad : {hashed, failed, keyed, summed}) {
    test::WriteIndex(dir.Join("x"), SampleHeader(), {bad});
    EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("x")).status(), Status::Code::kCorrupt, "paired by size"));
  }
}

TEST(IndexFile, TruncatedWithoutTrailer) {
  TempDir dir;
  std::vector<FileEntry> files;
  for (uint64_t i = 0; i < 25; ++i) files.push_back(SampleEntry(i, 64 * 1024));
  const std::string path = dir.Join("cut.idx");
  test::WriteIndex(path, SampleHeader(), files, 10, /*finish=*/false);

  auto c = ReadIndexFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "truncated"));
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, path));

  IndexReadOptions o;
  o.allow_truncated = true;
  c = ReadIndexFile(path, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->result.truncated);
  ASSERT_EQ(c->files.size(), 25u);
  for (size_t i = 0; i < files.size(); ++i) ExpectSameEntry(c->files[i], files[i]);
}

TEST(IndexFile, CutInsideAFrame) {
  TempDir dir;
  const std::string full = dir.Join("full.idx");
  auto out = OutputFile::Open(full);
  ASSERT_TRUE(out.ok());
  IndexWriter w(out->get(), 10);
  ASSERT_OK(w.WriteHeader(SampleHeader()));
  std::vector<off_t> batch_end;
  for (uint64_t i = 0; i < 30; ++i) {
    ASSERT_OK(w.Add(SampleEntry(i, 64 * 1024)));
    if (i % 10 == 9) {
      ASSERT_OK(w.Flush());  // the frame is written behind
      batch_end.push_back(::lseek((*out)->fd(), 0, SEEK_CUR));
    }
  }
  ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
  const std::string data = test::ReadFile(full);
  ASSERT_EQ(batch_end.size(), 3u);

  // Cut in the middle of the third batch: two whole batches survive.
  const std::string cut = dir.Join("cut.idx");
  test::WriteFile(cut, data.substr(0, size_t(batch_end[1] + (batch_end[2] - batch_end[1]) / 2)));
  auto c = ReadIndexFile(cut);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, cut));
  IndexReadOptions o;
  o.allow_truncated = true;
  c = ReadIndexFile(cut, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->result.truncated);
  EXPECT_EQ(c->files.size(), 20u);

  // Cut inside the trailer's checksum: the strict reader still refuses the file.
  test::WriteFile(cut, data.substr(0, data.size() - 2));
  EXPECT_TRUE(StatusIs(ReadIndexFile(cut).status(), Status::Code::kCorrupt));
  // Cut inside the trailer's data: all batches survive but the file is incomplete.
  test::WriteFile(cut, data.substr(0, data.size() - 5));
  EXPECT_TRUE(StatusIs(ReadIndexFile(cut).status(), Status::Code::kCorrupt));
  c = ReadIndexFile(cut, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->result.truncated);
  EXPECT_EQ(c->files.size(), 30u);

  // Cut inside the header: nothing usable, even when truncation is allowed.
  test::WriteFile(cut, data.substr(0, 10));
  EXPECT_TRUE(StatusIs(ReadIndexFile(cut, o).status(), Status::Code::kCorrupt, "not an oans index"));
}

TEST(IndexFile, WrongMagic) {
  TempDir dir;
  WriteFrames(dir.Join("m"), {[](auto f) { FillHeader(f, "something-else"); }, [](auto f) { FillTrailer(f, 0, 0); }});
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("m")).status(), Status::Code::kCorrupt, "wrong magic"));
}

TEST(IndexFile, PlanGivenToIndexReader) {
  TempDir dir;
  PlanHeader ph;
  ph.filesystems.resize(1);
  test::WritePlan(dir.Join("p.plan"), ph, {});
  auto c = ReadIndexFile(dir.Join("p.plan"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "is a dedupe plan"));
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, dir.Join("p.plan")));
}

TEST(IndexFile, NewerFormatVersion) {
  TempDir dir;
  IndexHeader h = SampleHeader();
  h.format_version = kIndexFormatVersion + 1;
  test::WriteIndex(dir.Join("v.idx"), h, {SampleEntry(1, h.block_size)});
  auto c = ReadIndexFile(dir.Join("v.idx"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kVersion, "newer"));
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kVersion, std::to_string(kIndexFormatVersion + 1)));
}

TEST(IndexFile, EmptyFile) {
  TempDir dir;
  test::WriteFile(dir.Join("empty"), "");
  auto c = ReadIndexFile(dir.Join("empty"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "empty"));
  IndexReadOptions o;
  o.allow_truncated = true;
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("empty"), o).status(), Status::Code::kCorrupt, "empty"));
}

TEST(IndexFile, GarbageFile) {
  TempDir dir;
  test::WriteFile(dir.Join("g"), test::RandomBytes(5000, 9));
  auto c = ReadIndexFile(dir.Join("g"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "not an oans index"));
  test::WriteFile(dir.Join("text"), "path,size\n/a,1\n");
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("text")).status(), Status::Code::kCorrupt, "not an oans index"));
}

TEST(IndexFile, MissingFileIsIoError) {
  TempDir dir;
  auto c = ReadIndexFile(dir.Join("nope"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kIoError);
  EXPECT_EQ(c.status().errnum(), ENOENT);
}

TEST(IndexFile, ConcatenatedIndexesAreSections) {
  TempDir dir;
  IndexHeader h1 = SampleHeader(), h2 = SampleHeader();
  h2.hostname = "second";
  h2.filesystems.resize(1);
  std::vector<FileEntry> f1, f2;
  for (uint64_t i = 0; i < 5; ++i) f1.push_back(SampleEntry(i, h1.block_size));
  for (uint64_t i = 10; i < 13; ++i) {
    f2.push_back(SampleEntry(i, h2.block_size));
    f2.back().fs = 0;
  }
  test::WriteIndex(dir.Join("a"), h1, f1, 2);
  test::WriteIndex(dir.Join("b"), h2, f2, 2);
  test::WriteFile(dir.Join("ab"), test::ReadFile(dir.Join("a")) + test::ReadFile(dir.Join("b")));

  std::vector<std::string> hosts;
  std::vector<std::pair<std::string, uint64_t>> seen;  // header hostname, ino
  auto r = ReadIndex(
      dir.Join("ab"), {},
      [&](const IndexHeader& h) {
        hosts.push_back(h.hostname);
        return Status::Ok();
      },
      [&](const IndexHeader& h, std::vector<FileEntry>& b) {
        for (auto& e : b) seen.push_back({h.hostname, e.ino});
        return Status::Ok();
      });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sections, 2);
  EXPECT_EQ(hosts, (std::vector<std::string>{"testhost", "second"}));
  EXPECT_EQ(r->totals.records, 8u);
  EXPECT_EQ(r->totals.batches, 5u);  // 3 + 2
  ASSERT_EQ(seen.size(), 8u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(seen[i], std::make_pair(std::string("testhost"), uint64_t(1000 + i)));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(seen[5 + i], std::make_pair(std::string("second"), uint64_t(1010 + i)));

  // A truncated first part cannot be followed by a second index.
  test::WriteIndex(dir.Join("t"), h1, f1, 2, /*finish=*/false);
  test::WriteFile(dir.Join("tb"), test::ReadFile(dir.Join("t")) + test::ReadFile(dir.Join("b")));
  EXPECT_TRUE(StatusIs(ReadIndexFile(dir.Join("tb")).status(), Status::Code::kCorrupt));
}

TEST(IndexFile, CallbackErrorStopsRead) {
  TempDir dir;
  std::vector<FileEntry> files;
  for (uint64_t i = 0; i < 10; ++i) files.push_back(SampleEntry(i, 64 * 1024));
  test::WriteIndex(dir.Join("x"), SampleHeader(), files, 2);
  int batches = 0;
  auto r = ReadIndex(
      dir.Join("x"), {}, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader&, std::vector<FileEntry>&) {
        return ++batches == 2 ? Status::Invalid("stop here") : Status::Ok();
      });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StatusIs(r.status(), Status::Code::kInvalidArgument, "stop here"));
  EXPECT_EQ(batches, 2);
  auto h = ReadIndex(
      dir.Join("x"), {}, [](const IndexHeader&) { return Status::Mismatch("no header wanted"); },
      [&](const IndexHeader&, std::vector<FileEntry>&) {
        ADD_FAILURE() << "batch after a failed header";
        return Status::Ok();
      });
  EXPECT_TRUE(StatusIs(h.status(), Status::Code::kMismatch, "no header wanted"));
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// Writes an index of 30 records in batches of 10; returns the file and where each frame
// (header, three batches, trailer) ends.
std::string ThreeBatches(const std::string& path, std::vector<off_t>* ends) {
  auto out = OutputFile::Open(path);
  EXPECT_TRUE(out.ok());
  IndexWriter w(out->get(), 10);
  EXPECT_OK(w.WriteHeader(SampleHeader()));
  EXPECT_OK(w.Flush());  // frames are written behind
  ends->push_back(::lseek((*out)->fd(), 0, SEEK_CUR));
  for (uint64_t i = 0; i < 30; ++i) {
    EXPECT_OK(w.Add(SampleEntry(i, 64 * 1024)));
    if (i % 10 == 9) {
      EXPECT_OK(w.Flush());
      ends->push_back(::lseek((*out)->fd(), 0, SEEK_CUR));
    }
  }
  EXPECT_OK(w.Finish());
  EXPECT_OK((*out)->Commit());
  return test::ReadFile(path);
}

// A batch whose checksum fails is damage, even to a reader that accepts an interrupted
// scan: it is refused with the file and the batch's offset, and no record of it (or
// after it) is handed out. A cut is still accepted, up to the complete batches.
TEST(IndexFile, DamagedBatchIsNotTruncation) {
  TempDir dir;
  std::vector<off_t> ends;
  const std::string data = ThreeBatches(dir.Join("full.idx"), &ends);
  ASSERT_EQ(ends.size(), 4u);
  const std::string bad = dir.Join("bad.idx");
  std::string d = data;
  d[size_t(ends[2] - 1)] ^= 0x01;  // the second batch's checksum
  test::WriteFile(bad, d);
  IndexReadOptions o;
  o.allow_truncated = true;
  size_t handed_out = 0;
  auto r = ReadIndex(
      bad, o, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader&, std::vector<FileEntry>& b) {
        handed_out += b.size();
        return Status::Ok();
      });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StatusIs(r.status(), Status::Code::kCorrupt, bad));
  EXPECT_TRUE(StatusIs(r.status(), Status::Code::kCorrupt, "damaged"));
  EXPECT_TRUE(StatusIs(r.status(), Status::Code::kCorrupt, "byte " + std::to_string(ends[1])));
  EXPECT_EQ(handed_out, 10u);

  // The same file cut inside that batch instead: accepted as interrupted, 10 records.
  const std::string cut = dir.Join("cut.idx");
  test::WriteFile(cut, data.substr(0, size_t(ends[2] - 3)));
  auto c = ReadIndexFile(cut, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->result.truncated);
  EXPECT_EQ(c->result.cut_at, uint64_t(ends[1]));
  EXPECT_EQ(c->files.size(), 10u);
}

// A record that does not parse names the offset of its frame.
TEST(IndexFile, UnparsableRecordNamesItsFrame) {
  TempDir dir;
  FileEntry e = SampleEntry(1, 64 * 1024);
  e.fs = 7;  // no such filesystem
  test::WriteIndex(dir.Join("x"), SampleHeader(), {SampleEntry(0, 64 * 1024), e}, 1);
  IndexReadOptions o;
  o.allow_truncated = true;
  auto c = ReadIndexFile(dir.Join("x"), o);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "unknown filesystem"));
  EXPECT_TRUE(StatusIs(c.status(), Status::Code::kCorrupt, "the bad frame starts at byte"));
}

// A hashed file may carry no block hashes (a huge sparse file): it reads back so.
TEST(IndexFile, HashedFileWithoutBlockHashes) {
  TempDir dir;
  FileEntry e = SampleEntry(1, 64 * 1024);
  ASSERT_TRUE(e.hashed);
  e.size = uint64_t(1) << 62;
  e.block_hashes.clear();
  test::WriteIndex(dir.Join("x"), SampleHeader(), {e});
  auto c = ReadIndexFile(dir.Join("x"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->files.size(), 1u);
  EXPECT_TRUE(c->files[0].hashed);
  EXPECT_TRUE(c->files[0].block_hashes.empty());
  EXPECT_EQ(c->files[0].hash, e.hash);
}

}  // namespace
}  // namespace oans

namespace oans {
namespace {

// A reader keeps batches encoded (BatchView) and copies their frames into another index,
// interleaved with records it adds; the copies of frames that follow each other are made
// at once, after the reader has closed the source. The new index holds every record, in
// order, and its totals count them.
TEST(IndexFile, KeptEncodedFramesAreCopiedInOrder) {
  TempDir dir;
  std::vector<FileEntry> files;
  for (uint64_t i = 0; i < 50; ++i) files.push_back(SampleEntry(i, 64 * 1024));
  test::WriteIndex(dir.Join("a"), SampleHeader(), files, 5);  // 10 batches
  auto out = OutputFile::Open(dir.Join("b"));
  ASSERT_TRUE(out.ok());
  IndexWriter w(out->get(), 5);
  ASSERT_OK(w.WriteHeader(SampleHeader()));
  FrameSpan span;
  IndexReadOptions ro;
  ro.span = &span;
  size_t batch_no = 0, viewed = 0;
  std::vector<FileEntry> expect;
  ro.keep_encoded = [&](const IndexHeader&, const BatchView& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      const FileEntry& e = files[viewed + i];
      EXPECT_EQ(v.path(i), e.path);
      EXPECT_EQ(v.ino(i), e.ino);
      EXPECT_EQ(v.fs(i), e.fs);
      EXPECT_EQ(v.has_error(i), !e.error.empty());
      EXPECT_EQ(v.other_path_count(i), e.other_paths.size());
      if (!e.other_paths.empty()) {
        EXPECT_EQ(v.other_path(i, 1), e.other_paths[1]);
      }
      EXPECT_EQ(v.first_physical(i).has_value(), !e.extents.empty());
      // The keys, in place as decoded.
      EXPECT_EQ(v.hashed(i), e.hashed);
      EXPECT_EQ(v.hash(i), e.hash);
      EXPECT_EQ(v.block_hashes(i).size(), e.block_hashes.size() * 16);
      for (size_t j = 0; j < e.block_hashes.size(); ++j) {
        Hash128 h;
        std::memcpy(&h.hi, v.block_hashes(i).data() + 16 * j, 8);
        std::memcpy(&h.lo, v.block_hashes(i).data() + 16 * j + 8, 8);
        EXPECT_EQ(h, e.block_hashes[j]);
      }
      EXPECT_EQ(v.sector_sums(i), e.sector_sums);
    }
    viewed += v.size();
    return batch_no++ % 4 != 3;  // every fourth batch decoded, the rest copied
  };
  ro.on_encoded = [&](const IndexHeader&, const IndexTotals& counted) {
    EXPECT_EQ(counted.records, 5u);
    EXPECT_EQ(counted.batches, 1u);
    for (uint64_t k = 0; k < counted.records; ++k) expect.push_back(files[expect.size()]);
    return w.AppendFrame(span, counted);
  };
  auto r = ReadIndex(
      dir.Join("a"), ro, [](const IndexHeader&) { return Status::Ok(); },
      [&](const IndexHeader&, std::vector<FileEntry>& batch) {
        for (auto& e : batch) {
          expect.push_back(e);
          EXPECT_OK(w.Add(std::move(e)));
        }
        return Status::Ok();
      });
  ASSERT_TRUE(r.ok()) << r.status().message();
  FileEntry last = SampleEntry(99, 64 * 1024);
  expect.push_back(last);
  ASSERT_OK(w.Add(last));
  ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
  EXPECT_EQ(w.totals().records, 51u);
  auto got = ReadIndexFile(dir.Join("b"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->files.size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) ExpectSameEntry(got->files[i], expect[i]);
  EXPECT_EQ(got->result.totals.records, 51u);
}

// A record that decoding refuses is refused when the batch is kept encoded too.
TEST(IndexFile, KeptEncodedBatchesAreCheckedAsDecoded) {
  TempDir dir;
  FileEntry bad = SampleEntry(1, 64 * 1024);
  bad.fs = 7;  // the header lists two filesystems
  test::WriteIndex(dir.Join("x"), SampleHeader(), {SampleEntry(2, 64 * 1024), bad}, 5);
  IndexReadOptions ro;
  bool asked = false;
  ro.keep_encoded = [&](const IndexHeader&, const BatchView&) { return asked = true; };
  ro.on_encoded = [](const IndexHeader&, const IndexTotals&) { return Status::Ok(); };
  auto r = ReadIndex(
      dir.Join("x"), ro, [](const IndexHeader&) { return Status::Ok(); },
      [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
  EXPECT_TRUE(StatusIs(r.status(), Status::Code::kCorrupt, "unknown filesystem"));
  EXPECT_FALSE(asked);
}

// An index whose second batch frame (at *second) holds `bad` after a clean record.
void WriteWithSecondBatch(const std::string& path, const FileEntry& bad, const IndexDir* bad_dir, off_t* second) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok());
  IndexWriter w(out->get(), 1);
  IndexHeader h = SampleHeader();
  h.directories = true;
  ASSERT_OK(w.WriteHeader(h));
  ASSERT_OK(w.AddDir({"/data", 0, 256}));
  ASSERT_OK(w.Add(SampleEntry(1, 64 * 1024)));
  ASSERT_OK(w.Flush());  // the frame is written behind
  *second = ::lseek((*out)->fd(), 0, SEEK_CUR);
  if (bad_dir) ASSERT_OK(w.AddDir(*bad_dir));
  ASSERT_OK(w.Add(bad));
  ASSERT_OK(w.Finish());
  ASSERT_OK((*out)->Commit());
}

// A record whose path is empty, relative or not clean (an empty, "." or ".." component,
// a NUL byte) is refused as damage naming the index and the offset of its batch frame,
// by every way of reading it (decoded, kept encoded, directory records), instead of
// being handed on to a plan that apply would call damaged.
TEST(IndexFile, RecordWithRelativeOrUncleanPathIsDamageAtItsFrame) {
  TempDir dir;
  const std::string path = dir.Join("x.idx");
  const std::vector<std::string> bad_paths = {"",          "data/a",     "./a",        "/data//a", "/data/./a",
                                              "/data/../a", "/data/a/", std::string("/data/a\0b", 9)};
  auto expect_damage = [&](const Status& s, off_t at, const std::string& why) {
    EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, path + " is damaged"));
    EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, why));
    EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "the bad frame starts at byte " + std::to_string(at)));
  };
  for (const auto& p : bad_paths) {
    SCOPED_TRACE(p);
    FileEntry e = SampleEntry(2, 64 * 1024);
    e.path = p;
    off_t second = 0;
    WriteWithSecondBatch(path, e, nullptr, &second);
    size_t handed_out = 0;
    auto r = ReadIndex(
        path, IndexReadOptions{}, [](const IndexHeader&) { return Status::Ok(); },
        [&](const IndexHeader&, std::vector<FileEntry>& b) {
          handed_out += b.size();
          return Status::Ok();
        });
    expect_damage(r.status(), second, p.empty() ? "a record has an empty path" : "a record's path");
    EXPECT_EQ(handed_out, 1u);
    // Kept encoded (a followed scan's carry, a plan --since), it is refused the same.
    IndexReadOptions ro;
    ro.keep_encoded = [](const IndexHeader&, const BatchView&) { return true; };
    ro.on_encoded = [](const IndexHeader&, const IndexTotals&) { return Status::Ok(); };
    r = ReadIndex(
        path, ro, [](const IndexHeader&) { return Status::Ok(); },
        [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
    expect_damage(r.status(), second, "path");
  }
  FileEntry relative = SampleEntry(2, 64 * 1024);
  relative.path = "srv/a";
  off_t second = 0;
  WriteWithSecondBatch(path, relative, nullptr, &second);
  expect_damage(ReadIndexFile(path).status(), second, "a record's path is relative: \"srv/a\"");
  // A hardlink's other path, and a directory record's path.
  FileEntry linked = SampleEntry(2, 64 * 1024);
  linked.other_paths = {"/data/b", "b"};
  WriteWithSecondBatch(path, linked, nullptr, &second);
  expect_damage(ReadIndexFile(path).status(), second, "a record's other link's path is relative");
  const IndexDir bad_dir{"/data/../etc", 0, 257};
  WriteWithSecondBatch(path, SampleEntry(2, 64 * 1024), &bad_dir, &second);
  IndexReadOptions with_dirs;
  with_dirs.on_dirs = [](const IndexHeader&, std::vector<IndexDir>&) { return Status::Ok(); };
  expect_damage(ReadIndexFile(path, with_dirs).status(), second,
                "a directory record's path has an empty, \".\" or \"..\" component: \"/data/../etc\"");
  // The same index with clean paths reads.
  WriteWithSecondBatch(path, SampleEntry(2, 64 * 1024), nullptr, &second);
  auto c = ReadIndexFile(path, with_dirs);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->files.size(), 2u);
}

}  // namespace
}  // namespace oans
