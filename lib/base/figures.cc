#include "lib/base/figures.h"

#include "lib/base/units.h"

namespace oans {
namespace {

// The label with "{}" replaced by text; a label without "{}" stays as it is.
std::string Fill(const std::string& label, const std::string& text) {
  const size_t at = label.find("{}");
  if (at == std::string::npos) return label;
  return label.substr(0, at) + text + label.substr(at + 2);
}

// One value in words, by its unit.
std::string Words(Unit unit, const FigureValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v)) return unit == Unit::kBytes ? FormatSize(*u) : std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&v)) return unit == Unit::kBytes ? FormatSignedSize(*i) : std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return unit == Unit::kSeconds ? FormatDuration(*d) : std::to_string(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "";
}

}  // namespace

const char* UnitName(Unit u) {
  switch (u) {
    case Unit::kCount:
      return "count";
    case Unit::kBytes:
      return "bytes";
    case Unit::kSeconds:
      return "seconds";
    case Unit::kFlag:
      return "flag";
    case Unit::kName:
      return "name";
    case Unit::kByReason:
      return "bytes by reason";
  }
  return "?";
}

Json FigureJson(const FigureValue& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return Json();
        } else if constexpr (std::is_same_v<T, std::string>) {
          return JsonText(x);
        } else if constexpr (std::is_same_v<T, std::map<std::string, uint64_t>>) {
          Json j = Json::object();
          for (const auto& [k, n] : x) j[ToValidUtf8(k)] = n;
          return j;
        } else {
          return Json(x);
        }
      },
      v);
}

FigureValue FigureFromJson(const Json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_object()) return {};
  std::map<std::string, uint64_t> m;
  for (const auto& [k, n] : j.items())
    if (n.is_number_unsigned()) m[k] = n.get<uint64_t>();
  return m;
}

bool FigureEmpty(const FigureValue& v) {
  return std::visit(
      [](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return true;
        else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::map<std::string, uint64_t>>)
          return x.empty();
        else if constexpr (std::is_same_v<T, int64_t>)
          return false;  // a net or a measured change: 0 is news
        else
          return x == T{};
      },
      v);
}

std::vector<std::string> FigureText(Unit unit, const std::string& label, const FigureValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return {};
  if (const auto* b = std::get_if<bool>(&v)) return *b ? std::vector<std::string>{label} : std::vector<std::string>{};
  std::vector<std::string> out;
  if (const auto* m = std::get_if<std::map<std::string, uint64_t>>(&v)) {
    for (const auto& [reason, bytes] : *m) out.push_back(Fill(label, FormatSize(bytes) + ": " + reason));
    return out;
  }
  out.push_back(Fill(label, Words(unit, v)));
  return out;
}

}  // namespace oans
