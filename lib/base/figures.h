// A tool's summary figures, each declared once. A figure has a JSON name, a unit and a
// label. The same table renders the `--json` object and the human summary. So the two
// cannot drift apart, and docs/format.md lists every figure (a test checks it).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lib/base/json.h"

namespace oans {

enum class Unit {
  kCount,     // a number of things
  kBytes,     // bytes; signed where a figure can go negative
  kSeconds,   // wall time
  kFlag,      // true or false
  kName,      // a word from a fixed set
  kByReason,  // bytes by reason, a JSON object
};

// The unit as docs/format.md writes it: "count", "bytes", "seconds", ...
const char* UnitName(Unit u);

// A figure's value. monostate is "not known" (JSON null).
using FigureValue =
    std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string, std::map<std::string, uint64_t>>;

// Where the human summary shows a figure.
enum class Place {
  kBody,     // in the indented lines, joined with ", "
  kNewLine,  // the same, but beginning a new line: a new topic
  kHead,     // in the first line, even when 0
};

template <class S>
struct Figure {
  const char* json;  // the JSON field, lower snake case
  Unit unit;
  // The words in the human summary; "{}" stands for the value. A flag's label has no
  // "{}": it is shown when true. Empty: in JSON only.
  const char* label;
  std::function<FigureValue(const S&)> get;
  // Figures of the body are left out when 0.
  Place place = Place::kBody;
};

template <class S>
using Figures = std::vector<Figure<S>>;

// The value as JSON: null, a number, a flag, a string or an object.
Json FigureJson(const FigureValue& v);
// A value read back from JSON: a record that holds a summary's figures.
FigureValue FigureFromJson(const Json& j);
// Whether the summary leaves the value out: null, 0, false, empty. A signed 0 is
// kept: it is a net or a measured change.
bool FigureEmpty(const FigureValue& v);
// The label with its value: "read 1.2 GiB". A by-reason figure gives one part per
// reason: "skipped 4 KiB: differs".
std::vector<std::string> FigureText(Unit unit, const std::string& label, const FigureValue& v);

// The JSON object of every figure, in the table's order.
template <class S>
Json FiguresJson(const Figures<S>& table, const S& s) {
  Json j = Json::object();
  for (const auto& f : table) j[f.json] = FigureJson(f.get(s));
  return j;
}

// The first line's words, joined by spaces: "found 12 files (1 MiB)".
template <class S>
std::string FiguresHead(const Figures<S>& table, const S& s) {
  std::string out;
  for (const auto& f : table) {
    if (f.place != Place::kHead) continue;
    for (const auto& part : FigureText(f.unit, f.label, f.get(s))) out += (out.empty() ? "" : " ") + part;
  }
  return out;
}

// The summary's parts in lines: every labelled figure not in the head and not empty.
// A kNewLine figure begins a new line. With `all`, empty ones too (oans-plan --stats).
template <class S>
std::vector<std::vector<std::string>> FiguresBody(const Figures<S>& table, const S& s, bool all = false) {
  std::vector<std::vector<std::string>> out(1);
  bool fresh = false;  // a kNewLine figure was met: its parts begin a line
  for (const auto& f : table) {
    if (f.place == Place::kHead || !*f.label) continue;
    fresh = fresh || f.place == Place::kNewLine;
    const FigureValue v = f.get(s);
    if (!all && FigureEmpty(v)) continue;
    for (auto& part : FigureText(f.unit, f.label, v)) {
      if (fresh && !out.back().empty()) out.emplace_back();
      fresh = false;
      out.back().push_back(std::move(part));
    }
  }
  return out;
}

}  // namespace oans
