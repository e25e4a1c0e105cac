#include "lib/base/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace oans {
namespace {

// Splits "12.5Gi" into a number and a suffix; false when the number part is malformed.
bool SplitNumber(const std::string& t, double* number, std::string* suffix) {
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || (t[i] == '.' && !dot))) {
    if (t[i] == '.') dot = true; else digits = true;
    ++i;
  }
  if (!digits) return false;
  *number = std::strtod(t.substr(0, i).c_str(), nullptr);
  *suffix = t.substr(i);
  return true;
}

}  // namespace

Result<uint64_t> ParseSize(const std::string& text) {
  double n;
  std::string suffix;
  const std::string accepted = "expected a size such as 4096, 4K, 128M, 1G or 2T";
  if (!SplitNumber(text, &n, &suffix)) return Status::Invalid("'" + text + "': " + accepted);
  std::string s;
  for (char c : suffix) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // "iB" / "B" only after a unit letter: "4BB" and "4BiB" are not sizes.
  if (s.size() >= 3 && s.substr(s.size() - 2) == "IB" && s[0] != 'B') s.resize(s.size() - 2);
  else if (s.size() == 2 && s[1] == 'B' && s[0] != 'B') s.resize(1);
  double mult;
  if (s.empty() || s == "B") mult = 1;
  else if (s == "K") mult = 1024.0;
  else if (s == "M") mult = 1024.0 * 1024;
  else if (s == "G") mult = 1024.0 * 1024 * 1024;
  else if (s == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (s == "P") mult = 1024.0 * 1024 * 1024 * 1024 * 1024;
  else return Status::Invalid("'" + text + "': unknown unit '" + suffix + "'; " + accepted);
  double v = n * mult;
  if (v >= 18446744073709551615.0) return Status::Invalid("'" + text + "': too large");
  if (mult == 1 && n != std::floor(n)) return Status::Invalid("'" + text + "': a byte count must be whole");
  return static_cast<uint64_t>(v);
}

Result<uint64_t> ParseDurationSeconds(const std::string& text) {
  double n;
  std::string suffix;
  const std::string accepted = "expected a duration such as 90s, 30m, 2h or 1d";
  if (!SplitNumber(text, &n, &suffix)) return Status::Invalid("'" + text + "': " + accepted);
  double mult;
  if (suffix.empty() || suffix == "s") mult = 1;
  else if (suffix == "m") mult = 60;
  else if (suffix == "h") mult = 3600;
  else if (suffix == "d") mult = 86400;
  else return Status::Invalid("'" + text + "': unknown unit '" + suffix + "'; " + accepted);
  return static_cast<uint64_t>(std::llround(n * mult));
}

std::string FormatSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) { v /= 1024; ++u; }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string FormatDuration(double seconds) {
  char buf[32];
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  if (seconds < 60) std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  else if (seconds < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(seconds) / 3600, (int(seconds) % 3600) / 60);
  return buf;
}

std::string FormatSignedSize(int64_t bytes) {
  return bytes < 0 ? "-" + FormatSize(uint64_t(0) - uint64_t(bytes)) : FormatSize(uint64_t(bytes));
}

}  // namespace oans
