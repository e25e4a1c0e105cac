// The summaries' figures of every tool. They are named by their meaning.
// docs/format.md ("Summaries") documents each. Those the run record copies exist.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "lib/apply/apply_figures.h"
#include "lib/plan/plan_figures.h"
#include "lib/run/record_figures.h"
#include "lib/scan/scan_figures.h"

namespace oans {
namespace {

using Fields = std::set<std::pair<std::string, std::string>>;  // (field, unit)

template <class S>
Fields FieldsOf(const Figures<S>& table) {
  Fields out;
  for (const auto& f : table) out.insert({f.json, UnitName(f.unit)});
  return out;
}

// The fields documented under "### TOOL" of the "## Summaries" section.
std::map<std::string, Fields> Documented() {
  std::ifstream in(std::string(OANS_SOURCE_DIR) + "/docs/format.md");
  EXPECT_TRUE(in) << "docs/format.md not found";
  std::map<std::string, Fields> out;
  const std::regex row(R"(^\| `([a-z0-9_]+)` \| ([a-z ]+) \|)");
  bool in_section = false;
  std::string tool;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line.rfind("## Summaries", 0) == 0;
    if (!in_section) continue;
    if (line.rfind("### ", 0) == 0) tool = line.substr(4);
    std::smatch m;
    if (!tool.empty() && std::regex_search(line, m, row)) out[tool].insert({m[1], m[2]});
  }
  return out;
}

std::map<std::string, Fields> Declared() {
  return {{"oans-scan", FieldsOf(ScanFigures())},
          {"oans-plan", FieldsOf(PlanFigures())},
          {"oans-apply", FieldsOf(ApplyFigures())},
          {"oans-diff", FieldsOf(DiffFigures())},
          {"oans run", FieldsOf(RecordFigures())}};
}

// Every field of every tool is documented with its unit, and nothing else is.
TEST(SummaryFigures, EveryFieldDocumentedWithItsUnit) {
  const auto docs = Documented();
  for (const auto& [tool, fields] : Declared()) {
    ASSERT_TRUE(docs.count(tool)) << "docs/format.md has no \"### " << tool << "\" under Summaries";
    const Fields& doc = docs.at(tool);
    for (const auto& f : fields)
      EXPECT_TRUE(doc.count(f)) << tool << ": " << f.first << " (" << f.second << ") is not documented";
    for (const auto& f : doc)
      EXPECT_TRUE(fields.count(f)) << tool << ": documented " << f.first << " (" << f.second << ") is no figure";
  }
}

// A name says its unit: bytes in "bytes", seconds in "seconds"; a count says neither.
template <class S>
void ExpectNamedByMeaning(const std::string& tool, const Figures<S>& table) {
  std::set<std::string> seen;
  const std::regex snake("[a-z][a-z0-9_]*");
  for (const auto& f : table) {
    const std::string name = f.json, label = f.label;
    SCOPED_TRACE(tool + ": " + name);
    EXPECT_TRUE(seen.insert(name).second) << "named twice";
    EXPECT_TRUE(std::regex_match(name, snake));
    const bool bytes = name.find("bytes") != std::string::npos;
    EXPECT_EQ(bytes, f.unit == Unit::kBytes);
    EXPECT_EQ(name.find("seconds") != std::string::npos, f.unit == Unit::kSeconds);
    // A flag's label is shown alone; any other has one place for its value.
    size_t slots = 0;
    for (size_t at = label.find("{}"); at != std::string::npos; at = label.find("{}", at + 2)) ++slots;
    if (!label.empty()) {
      EXPECT_EQ(slots, f.unit == Unit::kFlag ? 0u : 1u) << label;
    }
  }
}

TEST(SummaryFigures, NamesSayTheirUnit) {
  ExpectNamedByMeaning("oans-scan", ScanFigures());
  ExpectNamedByMeaning("oans-plan", PlanFigures());
  ExpectNamedByMeaning("oans-apply", ApplyFigures());
  ExpectNamedByMeaning("oans-diff", DiffFigures());
  ExpectNamedByMeaning("oans run", RecordFigures());
}

// A record's field copied from a summary exists there, with the record's unit.
TEST(SummaryFigures, FieldsTheRunRecordCopiesExist) {
  const auto declared = Declared();
  const Fields record = FieldsOf(RecordFigures());
  for (const auto& c : RecordCopies()) {
    const Fields& tool = declared.at(std::string("oans-") + c.tool);
    std::string unit;
    for (const auto& f : tool)
      if (f.first == c.from) unit = f.second;
    EXPECT_FALSE(unit.empty()) << c.field << ": oans-" << c.tool << " has no " << c.from;
    EXPECT_TRUE(record.count({c.field, unit})) << c.field << " is not a record figure of unit " << unit;
  }
  for (const char* counted : RecordCounted()) {
    EXPECT_TRUE(record.count({counted, "bytes"})) << counted;
    EXPECT_TRUE(record.count({std::string(counted) + "_total", "bytes"})) << counted;
  }
}

}  // namespace
}  // namespace oans
