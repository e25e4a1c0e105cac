// File details (lib/plan/details.h): the compact record and the store behind it.
#include "lib/plan/details.h"

#include <atomic>

#include <gtest/gtest.h>

#include "lib/base/extent_code.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

Detail Sample(uint64_t i) {
  Detail d;
  d.fs = uint32_t(i % 3);
  d.dev = 45 + i;
  d.ino = 1000000007ull * i;
  d.size = 1 + i * 4096;
  d.mtime_ns = -int64_t(i) * 1000;  // before 1970 too
  for (uint64_t e = 0; e < i % 5; ++e)  // contiguous and scattered extents, some flags
    d.extents.push_back({e * 8192, (e % 2 ? 13631488 + e * 8192 : 900000000 - e * 4096), 8192, uint32_t(e == 3 ? 8 : 0)});
  return d;
}

TEST(Details, RecordsRoundTrip) {
  for (uint64_t i = 0; i < 50; ++i) {
    Detail d = Sample(i), back;
    d.path_at = i * 77;
    std::string rec;
    EncodeDetail(d, &rec);
    ASSERT_OK(DecodeDetail(rec, &back));
    EXPECT_EQ(back.fs, d.fs);
    EXPECT_EQ(back.dev, d.dev);
    EXPECT_EQ(back.ino, d.ino);
    EXPECT_EQ(back.size, d.size);
    EXPECT_EQ(back.mtime_ns, d.mtime_ns);
    EXPECT_EQ(back.path_at, d.path_at);
    test::ExpectSameExtents(back.extents, d.extents);
    // Cut short anywhere: refused, never read past the end.
    for (size_t n = 0; n < rec.size(); ++n)
      EXPECT_FALSE(DecodeDetail(std::string_view(rec.data(), n), &back).ok()) << "record " << i << " cut at " << n;
  }
}

// Damaged in other ways: a byte too many, and a filesystem or link count past 32 bits.
TEST(Details, DamagedRecordsAreRefused) {
  Detail d = Sample(3);
  std::string rec;
  EncodeDetail(d, &rec);
  Detail back;
  EXPECT_TRUE(test::StatusIs(DecodeDetail(rec + '\0', &back), Status::Code::kCorrupt, "damaged file record"));
  for (const int widened : {0, 1, 2, 3}) {
    // The record again (0), with fs widened (1), with nlink widened (2), with a flag
    // neither 0 nor 1 for unread (3).
    const bool fs = widened == 1;
    std::string wide;
    PutVarint(&wide, fs ? uint64_t(UINT32_MAX) + 1 : d.fs);
    PutVarint(&wide, d.dev);
    PutVarint(&wide, d.ino);
    PutVarint(&wide, d.size);
    wide.append(reinterpret_cast<const char*>(&d.mtime_ns), sizeof d.mtime_ns);
    PutVarint(&wide, d.path_at);
    PutVarint(&wide, widened == 2 ? uint64_t(UINT32_MAX) + 1 : d.nlink);
    PutVarint(&wide, widened == 3 ? 2 : d.unread);
    PutExtents(&wide, d.extents);
    if (widened == 0) {
      EXPECT_EQ(wide, rec) << "the record's layout";
      continue;
    }
    EXPECT_TRUE(test::StatusIs(DecodeDetail(wide, &back), Status::Code::kCorrupt, "damaged file record")) << widened;
  }
}

TEST(Details, StoreInMemoryAndSpilledWithPreload) {
  TempDir dir;
  Details details(dir.path(), 4096, 4096);  // spills almost at once
  for (uint64_t i = 0; i < 2000; ++i) {
    Detail d = Sample(i);
    auto id = details.Add(d, "/r/file" + std::to_string(i));
    ASSERT_OK(id.status());
    EXPECT_EQ(*id, i);
  }
  EXPECT_TRUE(details.spilled());
  std::vector<bool> needed(2000, false);
  for (size_t i = 0; i < needed.size(); i += 7) needed[i] = true;
  ASSERT_OK(details.Preload(needed, 1 << 20, true));
  // Ids off the stride of stored offsets are found from the one before.
  for (uint32_t i : {0u, 7u, 3u, 31u, 32u, 33u, 1999u, 700u, 1001u}) {
    auto d = details.Get(i);
    ASSERT_OK(d.status());
    EXPECT_EQ((*d)->ino, Sample(i).ino);
    auto p = details.Path(i);
    ASSERT_OK(p.status());
    EXPECT_EQ(*p, "/r/file" + std::to_string(i));
  }
  uint32_t seen = 0;
  ASSERT_OK(details.ForEach([&](uint32_t id, const Detail& d) {
    EXPECT_EQ(id, seen++);
    EXPECT_EQ(d.size, Sample(id).size);
    return Status::Ok();
  }));
  EXPECT_EQ(seen, 2000u);
  EXPECT_TRUE(test::StatusIs(details.Get(2000).status(), Status::Code::kCorrupt, "no file 2000"));
}

TEST(Details, PathsGoToTheirFileAndComeBackForTheFilesNeeded) {
  TempDir dir;
  Details details(dir.path(), 64 << 20, 0);  // the details in memory, no room for paths
  const std::string tail(100, 'x');
  for (uint64_t i = 0; i < 5000; ++i) {
    Detail d = Sample(i);
    ASSERT_OK(details.Add(d, "/r/" + std::to_string(i) + tail).status());
  }
  EXPECT_FALSE(details.spilled());
  EXPECT_TRUE(details.paths_spilled());  // 500 KB of paths, past the piece being written
  std::vector<bool> none(5000, false), few(5000, false), many(5000, false);
  for (size_t i = 0; i < few.size(); i += 13) few[i] = true;  // fewer than kFewPaths: one by one
  for (size_t i = 0; i < many.size(); i += 2) many[i] = true;
  ASSERT_OK(details.Preload(none, 1 << 20, true));
  ASSERT_OK(details.Preload(few, 1 << 20, true));
  for (uint32_t i : {0u, 13u, 12u, 4999u}) EXPECT_EQ(*details.Path(i), "/r/" + std::to_string(i) + tail);
  ASSERT_OK(details.Preload(many, 1 << 20, true));
  for (uint32_t i : {0u, 13u, 12u, 4999u, 2600u, 2601u}) {  // preloaded or not
    auto p = details.Path(i);
    ASSERT_OK(p.status());
    EXPECT_EQ(*p, "/r/" + std::to_string(i) + tail);
    auto d = details.Get(i);
    ASSERT_OK(d.status());
    EXPECT_EQ((*d)->ino, Sample(i).ino);
  }
}

TEST(Details, PreloadStopsOnceAsked) {
  TempDir dir;
  Details details(dir.path(), 4096, 4096);
  for (uint64_t i = 0; i < 5000; ++i) {
    Detail d = Sample(i);
    ASSERT_OK(details.Add(d, "/r/file" + std::to_string(i)).status());
  }
  ASSERT_TRUE(details.spilled());
  std::vector<bool> needed(5000, true);
  std::atomic<bool> stop{true};
  Status s = details.Preload(needed, 1 << 20, true, &stop);
  EXPECT_EQ(s.code(), Status::Code::kInterrupted) << s.message();
  // Not asked to stop: the same preload goes through.
  stop = false;
  ASSERT_OK(details.Preload(needed, 1 << 20, true, &stop));
}

}  // namespace
}  // namespace oans
