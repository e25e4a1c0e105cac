// What a scan leaves unread by size (lib/scan/kept.h, SetAsideUnique): whole files only,
// a file whose size no other has; when pairs are made, two files of one size, both to be
// read, on one filesystem, not paired before (mapped, not read); every other file stays
// to be read.
#include "lib/scan/kept.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace oans {
namespace {

Candidate Kept(const std::string& path, uint64_t size, uint32_t fs = 0) {
  Candidate c;
  c.entry.path = path;
  c.entry.st.size = size;
  c.entry.st.ino = std::hash<std::string>()(path);
  c.fs = fs;
  return c;
}

std::set<std::string> Paths(const std::vector<Candidate>& cs) {
  std::set<std::string> out;
  for (const auto& c : cs) out.insert(c.entry.path);
  return out;
}

const KnownBefore kNever = [](const Candidate&) { return false; };
constexpr BySize kWholeFiles{true, true};

TEST(SetAsideUnique, UniqueUnreadPairsMappedTheRestRead) {
  std::vector<Candidate> kept = {Kept("/r/u", 10),  Kept("/r/p1", 20), Kept("/r/t1", 30), Kept("/r/p2", 20),
                                 Kept("/r/t2", 30), Kept("/r/t3", 30), Kept("/r/w", 40),  Kept("/r/x", 50),
                                 Kept("/r/y", 50, 1)};
  // Size 40 is also a record already written (reused): /r/w is read, not paired.
  SetAside aside = SetAsideUnique(&kept, {40, 7}, kNever, kWholeFiles);
  ASSERT_EQ(aside.unread.size(), 1u);
  EXPECT_EQ(aside.unread[0].path, "/r/u");
  EXPECT_FALSE(aside.unread[0].hashed);
  EXPECT_TRUE(aside.unread[0].error.empty());
  EXPECT_EQ(Paths(aside.paired), (std::set<std::string>{"/r/p1", "/r/p2"}));
  // Three of one size, one shared with a written record, and a size on two filesystems.
  EXPECT_EQ(Paths(kept), (std::set<std::string>{"/r/t1", "/r/t2", "/r/t3", "/r/w", "/r/x", "/r/y"}));
  // The files to read keep their order.
  std::vector<std::string> order;
  for (const auto& c : kept) order.push_back(c.entry.path);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(SetAsideUnique, APairPlannedBeforeIsRead) {
  for (const char* before : {"/r/a", "/r/b"}) {
    std::vector<Candidate> kept = {Kept("/r/a", 20), Kept("/r/b", 20), Kept("/r/c", 30), Kept("/r/d", 30)};
    SetAside aside =
        SetAsideUnique(&kept, {}, [&](const Candidate& c) { return c.entry.path == before; }, kWholeFiles);
    EXPECT_TRUE(aside.unread.empty());
    EXPECT_EQ(Paths(aside.paired), (std::set<std::string>{"/r/c", "/r/d"})) << before;
    EXPECT_EQ(Paths(kept), (std::set<std::string>{"/r/a", "/r/b"})) << before;
  }
}

// Outside whole files only, a unique size is read (its blocks may be partial duplicates);
// with pairs off, only whole files only leaves anything unread.
TEST(SetAsideUnique, EachRuleLeavesOnlyItsOwn) {
  auto files = [] { return std::vector<Candidate>{Kept("/r/u", 10), Kept("/r/p1", 20), Kept("/r/p2", 20)}; };
  std::vector<Candidate> kept = files();
  SetAside aside = SetAsideUnique(&kept, {}, kNever, BySize{false, true});
  EXPECT_TRUE(aside.unread.empty());
  EXPECT_EQ(Paths(aside.paired), (std::set<std::string>{"/r/p1", "/r/p2"}));
  EXPECT_EQ(Paths(kept), (std::set<std::string>{"/r/u"}));
  kept = files();
  aside = SetAsideUnique(&kept, {}, kNever, BySize{true, false});
  ASSERT_EQ(aside.unread.size(), 1u);
  EXPECT_TRUE(aside.paired.empty());
  EXPECT_EQ(Paths(kept), (std::set<std::string>{"/r/p1", "/r/p2"}));
}

// Who pairs: whole files only unless never; always outside it only without --previous,
// so that a pair is keyed by the next scan; nothing where btrfs checksums key the files.
TEST(BySizeFor, PairsWhereAsked) {
  struct Case {
    bool whole, previous;
    PairBySize pair;
    bool pairs;
  };
  for (const Case& k : {Case{true, false, PairBySize::kAuto, true}, Case{true, true, PairBySize::kAuto, true},
                        Case{true, false, PairBySize::kNever, false}, Case{false, false, PairBySize::kAuto, false},
                        Case{false, false, PairBySize::kAlways, true}, Case{false, true, PairBySize::kAlways, false},
                        Case{true, true, PairBySize::kAlways, true}}) {
    ScanOptions o;
    o.whole_files_only = k.whole;
    o.previous = k.previous ? "old.idx" : "";
    o.pair_by_size = k.pair;
    const BySize rule = BySizeFor(o, true);
    EXPECT_EQ(rule.pair, k.pairs) << k.whole << k.previous << int(k.pair);
    EXPECT_EQ(rule.unique_unread, k.whole);
    EXPECT_FALSE(BySizeFor(o, false).any());
  }
}

}  // namespace
}  // namespace oans
