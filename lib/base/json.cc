#include "lib/base/json.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace oans {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t Utf8Len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

// nlohmann writes backspace and form feed as \b and \f and DEL as itself; oans has always
// written all three as \u00XX, so a line shows no raw DEL and keeps its bytes. `dumped` is
// nlohmann's output: a backslash there always begins an escape, and DEL occurs only
// inside strings (it is never part of a multibyte sequence).
std::string EscapeLikeOans(const std::string& dumped) {
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    const char c = dumped[i];
    if (c == '\x7f') {
      out += "\\u007f";
    } else if (c == '\\' && i + 1 < dumped.size()) {
      const char e = dumped[++i];
      if (e == 'b') out += "\\u0008";
      else if (e == 'f') out += "\\u000c";
      else {
        out += c;
        out += e;
      }
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool IsValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Len(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(const std::string& s) {
  if (IsValidUtf8(s)) return s;
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

Json JsonText(const std::string& bytes) { return Json(ToValidUtf8(bytes)); }

Json JsonTextArray(const std::vector<std::string>& items) {
  Json a = Json::array();
  for (const auto& s : items) a.push_back(JsonText(s));
  return a;
}

void AddPath(Json& obj, const std::string& key, const std::string& path) {
  obj[key] = JsonText(path);
  if (!IsValidUtf8(path)) obj[key + "_hex"] = Hex(path);
}

std::string JsonLine(const Json& value) {
  return EscapeLikeOans(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void PrintJsonLine(std::FILE* f, const Json& value) {
  std::string line = JsonLine(value);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), f);
}

std::string JsonString(const std::string& s) { return JsonLine(JsonText(s)); }

}  // namespace oans
