#include "lib/base/spill.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

struct Rec {
  uint64_t key;
  uint32_t value, unused;
};
struct RecLess {
  bool operator()(const Rec& a, const Rec& b) const { return std::tie(a.key, a.value) < std::tie(b.key, b.value); }
};

std::vector<Rec> RandomRecords(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Rec> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = {rng() % 5000, uint32_t(i), 0};  // many equal keys
  return v;
}

std::vector<Rec> Collect(ExternalSorter<Rec, RecLess>& s) {
  std::vector<Rec> out;
  EXPECT_OK(s.ForEach([&](const Rec& r) {
    out.push_back(r);
    return Status::Ok();
  }));
  return out;
}

void ExpectSortedPermutation(std::vector<Rec> input, const std::vector<Rec>& got) {
  std::sort(input.begin(), input.end(), RecLess());
  ASSERT_EQ(got.size(), input.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].key, input[i].key) << i;
    ASSERT_EQ(got[i].value, input[i].value) << i;
  }
}

TEST(Spill, SorterInMemory) {
  TempDir dir;
  auto input = RandomRecords(10000, 1);
  ExternalSorter<Rec, RecLess> s(dir.path(), 64u << 20);
  for (const auto& r : input) ASSERT_OK(s.Add(r));
  EXPECT_EQ(s.size(), input.size());
  auto got = Collect(s);
  EXPECT_EQ(s.runs(), 0u);
  ExpectSortedPermutation(input, got);
}

TEST(Spill, SorterSpillsRunsAndMergesThem) {
  TempDir dir;
  auto input = RandomRecords(100000, 2);
  // 1024 records per run at the smallest budget: about a hundred runs.
  ExternalSorter<Rec, RecLess> s(dir.path(), 1);
  for (const auto& r : input) ASSERT_OK(s.Add(r));
  auto got = Collect(s);
  EXPECT_GE(s.runs(), 90u);
  ExpectSortedPermutation(input, got);
  // A second pass gives the same sequence.
  auto again = Collect(s);
  ASSERT_EQ(again.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(again[i].value, got[i].value);
  // Nothing named is left in the directory: the spill file was never linked.
  EXPECT_EQ(test::ListDir(dir.path()).size(), 0u);
}

TEST(Spill, ChunkedArraySortsAcrossChunks) {
  ChunkedArray<Rec> a;
  auto input = RandomRecords(3 * ChunkedArray<Rec>::kPerChunk + 17, 6);
  for (const auto& r : input) a.push_back(r);
  ASSERT_EQ(a.size(), input.size());
  EXPECT_EQ(a.chunks(), 4u);
  EXPECT_EQ(a[ChunkedArray<Rec>::kPerChunk + 5].value, input[ChunkedArray<Rec>::kPerChunk + 5].value);
  std::sort(a.begin(), a.end(), RecLess());
  std::vector<Rec> got;
  for (size_t i = 0; i < a.size(); ++i) got.push_back(a[i]);
  ExpectSortedPermutation(input, got);
  ChunkedArray<Rec> b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.size(), input.size());
}

TEST(Spill, SorterDrainsOnceInMemoryAndSpilled) {
  TempDir dir;
  for (uint64_t budget : {uint64_t(64) << 20, uint64_t(1)}) {
    auto input = RandomRecords(200000, 7);
    ExternalSorter<Rec, RecLess> s(dir.path(), budget);
    for (const auto& r : input) ASSERT_OK(s.Add(r));
    std::vector<Rec> got;
    ASSERT_OK(s.Drain([&](const Rec& r) {
      got.push_back(r);
      return Status::Ok();
    }));
    ExpectSortedPermutation(input, got);
    // Drained: nothing is left to visit, and the sorter can be filled again.
    EXPECT_EQ(s.size(), 0u);
    EXPECT_EQ(Collect(s).size(), 0u);
    ASSERT_OK(s.Add({1, 2, 0}));
    auto again = Collect(s);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].value, 2u);
  }
  EXPECT_EQ(test::ListDir(dir.path()).size(), 0u);
}

TEST(Spill, SorterStopsOnVisitorError) {
  TempDir dir;
  ExternalSorter<Rec, RecLess> s(dir.path(), 1);
  for (const auto& r : RandomRecords(5000, 3)) ASSERT_OK(s.Add(r));
  int seen = 0;
  Status st = s.ForEach([&](const Rec&) { return ++seen == 10 ? Status::Invalid("stop here") : Status::Ok(); });
  EXPECT_TRUE(StatusIs(st, Status::Code::kInvalidArgument, "stop here"));
  EXPECT_EQ(seen, 10);
}

TEST(Spill, SorterReportsUnwritableTempDir) {
  ExternalSorter<Rec, RecLess> s("/nonexistent/oans-spill-dir", 1);
  Status st;
  for (const auto& r : RandomRecords(5000, 4)) {
    st = s.Add(r);
    if (!st.ok()) break;
  }
  EXPECT_TRUE(StatusIs(st, Status::Code::kIoError, "/nonexistent/oans-spill-dir"));
}

TEST(Spill, RecordStoreBeforeAndAfterSpill) {
  TempDir dir;
  RecordStore store(dir.path(), 10000);  // below one chunk (64 KiB): spills past the first
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 40000; ++i) {
    // Mostly short records, some longer than one read of the store, some about the size
    // of that read (512 bytes with its 4-byte length).
    size_t len = (i % 97 == 0) ? 2000 + rng() % 3000 : (i % 101 == 0) ? 505 + size_t(i / 101) % 7 : rng() % 100;
    std::string r(len, '\0');
    for (auto& c : r) c = char(rng());
    if (i == 50) {
      EXPECT_FALSE(store.spilled());
    }
    auto at = store.Add(r);
    ASSERT_OK(at.status());
    records.push_back(r);
    offsets.push_back(*at);
  }
  EXPECT_TRUE(store.spilled());
  std::string got;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_OK(store.Get(offsets[i], &got));
    ASSERT_EQ(got, records[i]) << i;
  }
  // One sequential pass gives every record, in order, at its offset.
  size_t seen = 0;
  ASSERT_OK(store.ForEach([&](uint64_t at, const std::string& r) {
    EXPECT_EQ(at, offsets[seen]);
    EXPECT_EQ(r, records[seen]) << seen;
    seen++;
    return Status::Ok();
  }));
  EXPECT_EQ(seen, records.size());
  // A record found from an earlier one: across reads, on file and in memory.
  for (size_t i = 0; i + 40 < records.size(); i += 331) {
    for (uint32_t skip : {0u, 1u, 31u, 40u}) {
      ASSERT_OK(store.GetAfter(offsets[i], skip, &got));
      ASSERT_EQ(got, records[i + skip]) << i << " + " << skip;
    }
  }
  ASSERT_OK(store.GetAfter(offsets[offsets.size() - 3], 2, &got));
  EXPECT_EQ(got, records.back());
  EXPECT_TRUE(StatusIs(store.GetAfter(offsets.back(), 1, &got), Status::Code::kCorrupt, "out of range"));
  ASSERT_OK(store.Get(offsets.back(), &got));  // still in the write buffer
  EXPECT_EQ(got, records.back());
  EXPECT_TRUE(StatusIs(store.Get(store.bytes() + 10, &got), Status::Code::kCorrupt, "out of range"));
  EXPECT_EQ(test::ListDir(dir.path()).size(), 0u);
}

TEST(Spill, TempDirectoryChoice) {
  EXPECT_EQ(TempDirectory("/x"), "/x");
  setenv("TMPDIR", "/from-env", 1);
  EXPECT_EQ(TempDirectory(), "/from-env");
  unsetenv("TMPDIR");
  EXPECT_EQ(TempDirectory(), "/var/tmp");
}

}  // namespace
}  // namespace oans
