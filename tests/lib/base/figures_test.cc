// lib/base/figures.h: one table renders both the JSON and the human summary.
#include "lib/base/figures.h"

#include <gtest/gtest.h>

#include "lib/base/units.h"

namespace oans {
namespace {

struct Toy {
  uint64_t files = 0, bytes = 0;
  int64_t net = 0;
  double seconds = 0;
  bool cut = false, measured = false;
  std::map<std::string, uint64_t> skipped;
};

using V = FigureValue;

const Figures<Toy>& ToyFigures() {
  static const Figures<Toy> t = {
      {"files", Unit::kCount, "found {} files", [](const Toy& s) { return V(s.files); }, Place::kHead},
      {"seconds", Unit::kSeconds, "in {}", [](const Toy& s) { return V(s.seconds); }, Place::kHead},
      {"bytes", Unit::kBytes, "read {}", [](const Toy& s) { return V(s.bytes); }},
      {"net_bytes", Unit::kBytes, "net {}", [](const Toy& s) { return s.measured ? V(s.net) : V(); }},
      {"cut", Unit::kFlag, "stopped at --memory", [](const Toy& s) { return V(s.cut); }},
      {"skipped", Unit::kByReason, "skipped {}", [](const Toy& s) { return V(s.skipped); }, Place::kNewLine},
      {"hidden", Unit::kCount, "", [](const Toy& s) { return V(s.files * 2); }},
  };
  return t;
}

// Every figure is in the JSON, in the table's order, with its value.
TEST(Figures, JsonHasEveryFigureInOrder) {
  Toy s{.files = 3, .bytes = 4096, .net = -8192, .seconds = 1.5, .measured = true, .skipped = {{"differs", 512}}};
  const Json j = FiguresJson(ToyFigures(), s);
  EXPECT_EQ(JsonLine(j),
            "{\"files\":3,\"seconds\":1.5,\"bytes\":4096,\"net_bytes\":-8192,\"cut\":false,"
            "\"skipped\":{\"differs\":512},\"hidden\":6}");
  s.measured = false;
  EXPECT_TRUE(FiguresJson(ToyFigures(), s)["net_bytes"].is_null());
}

// The summary shows each labelled figure with the value the JSON has.
TEST(Figures, SummaryAgreesWithJson) {
  Toy s{.files = 3, .bytes = 5 << 20, .net = -8192, .seconds = 2, .cut = true, .measured = true,
        .skipped = {{"differs", 512}, {"EPERM", 4096}}};
  EXPECT_EQ(FiguresHead(ToyFigures(), s), "found 3 files in " + FormatDuration(2));
  const auto body = FiguresBody(ToyFigures(), s);
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0], (std::vector<std::string>{"read " + FormatSize(5 << 20), "net " + FormatSignedSize(-8192),
                                                "stopped at --memory"}));
  EXPECT_EQ(body[1], (std::vector<std::string>{"skipped " + FormatSize(4096) + ": EPERM",
                                                "skipped " + FormatSize(512) + ": differs"}));
}

// Empty figures leave the body; the head keeps its own; --stats shows zeros too.
TEST(Figures, EmptyFiguresLeftOutButInHead) {
  const Toy s;
  EXPECT_EQ(FiguresHead(ToyFigures(), s), "found 0 files in " + FormatDuration(0));
  const auto body = FiguresBody(ToyFigures(), s);
  ASSERT_EQ(body.size(), 1u);
  EXPECT_TRUE(body[0].empty());
  const auto all = FiguresBody(ToyFigures(), s, true);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], (std::vector<std::string>{"read 0 B"}));  // null, false and {} have no words
  // A net measured as 0 is shown.
  Toy m;
  m.measured = true;
  const auto measured = FiguresBody(ToyFigures(), m);
  EXPECT_EQ(measured[0], (std::vector<std::string>{"net 0 B"}));
}

TEST(Figures, NamesOfUnitsAreThoseOfTheDocs) {
  EXPECT_STREQ(UnitName(Unit::kCount), "count");
  EXPECT_STREQ(UnitName(Unit::kBytes), "bytes");
  EXPECT_STREQ(UnitName(Unit::kSeconds), "seconds");
  EXPECT_STREQ(UnitName(Unit::kFlag), "flag");
  EXPECT_STREQ(UnitName(Unit::kName), "name");
  EXPECT_STREQ(UnitName(Unit::kByReason), "bytes by reason");
}

}  // namespace
}  // namespace oans
