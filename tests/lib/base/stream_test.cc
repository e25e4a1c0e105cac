#include "lib/base/stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>

#include "lib/base/spill.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

struct IntLess {
  bool operator()(int a, int b) const { return a < b; }
};

template <typename T>
std::vector<T> Collect(Stream<T>& s) {
  std::vector<T> out;
  for (; s.Valid(); s.Next()) out.push_back(s.key());
  return out;
}

std::unique_ptr<Stream<int>> Ints(std::vector<int> v) { return std::make_unique<VectorStream<int>>(std::move(v)); }

// A stream that fails after `good` records.
class FailingStream : public Stream<int> {
 public:
  explicit FailingStream(int good) : good_(good) {}
  bool Valid() const override { return i_ < good_; }
  const int& key() const override { return i_; }
  void Next() override { ++i_; }
  Status status() const override { return i_ < good_ ? Status::Ok() : Status::Corrupt("broken run"); }

 private:
  int good_, i_ = 0;
};

TEST(Stream, MergingStreamMergesSortedStreams) {
  std::mt19937 rng(3);
  std::vector<int> all;
  std::vector<std::unique_ptr<Stream<int>>> children;
  for (int c = 0; c < 7; ++c) {
    std::vector<int> v(size_t(rng() % 50));
    for (int& x : v) x = int(rng() % 40);  // many equal keys across children
    std::sort(v.begin(), v.end());
    all.insert(all.end(), v.begin(), v.end());
    children.push_back(Ints(v));
  }
  children.push_back(Ints({}));  // an empty child
  std::sort(all.begin(), all.end());
  MergingStream<int, IntLess> m(std::move(children));
  EXPECT_EQ(Collect<int>(m), all);
  EXPECT_OK(m.status());
}

TEST(Stream, MergingStreamEndsWithTheFirstFailure) {
  std::vector<std::unique_ptr<Stream<int>>> children;
  children.push_back(Ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  children.push_back(std::make_unique<FailingStream>(3));
  MergingStream<int, IntLess> m(std::move(children));
  std::vector<int> got = Collect<int>(m);
  EXPECT_LT(got.size(), 13u);
  EXPECT_TRUE(test::StatusIs(m.status(), Status::Code::kCorrupt));
}

struct Rec {
  int key, value;
};

TEST(Stream, MergeJoinVisitsEveryKeyOnceWithTheLastLeft) {
  // Left: key 1 twice (the second wins), 2, 4. Right: 1, 3, 4 twice.
  VectorStream<Rec> left({{1, 10}, {1, 11}, {2, 20}, {4, 40}});
  VectorStream<Rec> right({{1, 100}, {3, 300}, {4, 400}, {4, 401}});
  auto key = [](const Rec& r) { return r.key; };
  std::vector<std::tuple<int, int, int>> seen;  // key, left value (-1: none), right value (-1: none)
  ASSERT_OK(MergeJoin(left, right, key, key, [&](const Rec* l, const Rec* r) {
    seen.push_back({l ? l->key : r->key, l ? l->value : -1, r ? r->value : -1});
    return Status::Ok();
  }));
  const std::vector<std::tuple<int, int, int>> want = {
      {1, 11, 100}, {2, 20, -1}, {3, -1, 300}, {4, 40, 400}, {4, 40, 401}};
  EXPECT_EQ(seen, want);
}

TEST(Stream, MergeJoinOfEmptySidesAndVisitorErrors) {
  VectorStream<Rec> none({}), some({{5, 1}});
  auto key = [](const Rec& r) { return r.key; };
  int calls = 0;
  ASSERT_OK(MergeJoin(none, some, key, key, [&](const Rec* l, const Rec* r) {
    EXPECT_EQ(l, nullptr);
    EXPECT_EQ(r->key, 5);
    return ++calls, Status::Ok();
  }));
  EXPECT_EQ(calls, 1);
  VectorStream<Rec> a({{1, 1}, {2, 2}}), b({{1, 1}, {2, 2}});
  calls = 0;
  Status st = MergeJoin(a, b, key, key, [&](const Rec*, const Rec*) { return ++calls, Status::Invalid("stop here"); });
  EXPECT_TRUE(test::StatusIs(st, Status::Code::kInvalidArgument, "stop here"));
  EXPECT_EQ(calls, 1);
}

TEST(Stream, MergeJoinStopsOnAFailedStream) {
  FailingStream left(2);
  VectorStream<int> right({0, 1, 2, 3});
  auto key = [](int x) { return x; };
  int calls = 0;
  Status st = MergeJoin(left, right, key, key, [&](const int*, const int*) { return ++calls, Status::Ok(); });
  EXPECT_TRUE(test::StatusIs(st, Status::Code::kCorrupt, "broken run"));
  EXPECT_EQ(calls, 2);  // keys 0 and 1; nothing after the failure
}

struct Key {
  uint64_t k;
  uint32_t seq, unused;
};
struct KeyLess {
  bool operator()(const Key& a, const Key& b) const { return a.k < b.k; }
};

TEST(Stream, SorterStreamsInMemoryAndSpilledAlike) {
  TempDir dir;
  std::mt19937_64 rng(9);
  std::vector<Key> records(50000);
  for (uint32_t i = 0; i < records.size(); ++i) records[i] = {rng() % 100000, i, 0};
  std::vector<uint64_t> want;
  for (const auto& r : records) want.push_back(r.k);
  std::sort(want.begin(), want.end());
  for (uint64_t budget : {uint64_t(64) << 20, uint64_t(16) << 10}) {  // one run; dozens of runs
    ExternalSorter<Key, KeyLess> s(dir.path(), budget);
    for (const auto& r : records) ASSERT_OK(s.Add(r));
    EXPECT_EQ(s.runs() > 1, budget < (1u << 20));
    auto read = s.Read();
    ASSERT_OK(read.status());
    std::vector<uint64_t> got;
    for (Stream<Key>& st = **read; st.Valid(); st.Next()) got.push_back(st.key().k);
    EXPECT_EQ(got, want);
    auto taken = s.Take();  // owns the records; the sorter is empty
    ASSERT_OK(taken.status());
    EXPECT_EQ(s.size(), 0u);
    got.clear();
    for (Stream<Key>& st = **taken; st.Valid(); st.Next()) got.push_back(st.key().k);
    EXPECT_EQ(got, want);
  }
}

TEST(Stream, RecordStoreReaderInOrderAcrossTheSpill) {
  TempDir dir;
  RecordStore store(dir.path(), 10000);  // spills past the first 64 KiB chunk
  std::vector<std::pair<uint64_t, std::string>> want;
  for (int i = 0; i < 3000; ++i) {
    std::string rec(size_t(i % 300), char('a' + i % 26));
    auto at = store.Add(rec);
    ASSERT_OK(at.status());
    want.push_back({*at, rec});
  }
  ASSERT_TRUE(store.spilled());
  std::vector<std::pair<uint64_t, std::string>> got;
  RecordStore::Reader r = store.Records();
  for (; r.Valid(); r.Next()) got.push_back({r.offset(), r.key()});
  EXPECT_OK(r.status());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace oans
