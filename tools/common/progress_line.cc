#include "tools/common/progress_line.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "lib/base/units.h"

namespace oans::cli {

namespace {

// Rates before this much of a phase has passed say more about start-up than speed.
constexpr double kMinElapsed = 0.2;

// What the fraction is measured in: bytes when a byte total is known, else items.
bool ByBytes(const ProgressSnapshot& s) { return s.total_bytes > 0; }

double Fraction(const ProgressSnapshot& s) {
  if (ByBytes(s)) return double(s.done_bytes) / double(s.total_bytes);
  return s.total_items ? double(s.done_items) / double(s.total_items) : 0;
}

bool HasTotal(const ProgressSnapshot& s) { return s.total_bytes > 0 || s.total_items > 0; }

// An estimate already reached: the real total is larger, by how much is not known.
bool PastEstimate(const ProgressSnapshot& s) { return s.estimate && HasTotal(s) && Fraction(s) >= 1.0; }

std::string Printf(const char* fmt, unsigned long long a, unsigned long long b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

double ProgressEta(const ProgressSnapshot& s, double elapsed_s) {
  if (!HasTotal(s) || PastEstimate(s)) return -1;
  const double f = Fraction(s);
  if (f >= 1.0) return 0;
  if (elapsed_s < kMinElapsed || f <= 0) return -1;
  return elapsed_s * (1.0 - f) / f;
}

std::string ProgressLine(const std::string& tool, const ProgressSnapshot& s, double elapsed_s) {
  const char* tilde = s.estimate ? "~" : "";
  std::string line = tool + " " + s.phase + ": ";
  // Bytes: "X / ~T", or "X" alone with no byte total; nothing when no byte is counted.
  const bool bytes = s.done_bytes > 0 || s.total_bytes > 0;
  if (bytes) {
    line += FormatSize(s.done_bytes);
    if (s.total_bytes > 0 && !PastEstimate(s)) line += " / " + std::string(tilde) + FormatSize(s.total_bytes);
    line += ", ";
  }
  if (s.total_items > 0 && !PastEstimate(s))
    line += Printf(s.estimate ? "%llu/~%llu items" : "%llu/%llu items", s.done_items, s.total_items);
  else
    line += Printf("%llu items", s.done_items);
  if (PastEstimate(s)) {
    line += " (more than the estimate of " + std::string(tilde) +
            (ByBytes(s) ? FormatSize(s.total_bytes) : Printf("%llu items", s.total_items)) + ")";
  } else if (HasTotal(s)) {
    double pct = 100.0 * Fraction(s);
    if (s.estimate) pct = std::min(pct, 99.0);
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%s%.1f%%)", tilde, pct);
    line += buf;
  }
  if (elapsed_s >= kMinElapsed && s.done_bytes > 0)
    line += ", " + FormatSize(uint64_t(double(s.done_bytes) / elapsed_s)) + "/s";
  const double eta = ProgressEta(s, elapsed_s);
  if (eta >= 0) line += ", ETA " + std::string(tilde) + FormatDuration(eta);
  return line;
}

}  // namespace oans::cli
