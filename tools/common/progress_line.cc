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

const char* ItemsOf(const std::string& phase) {
  if (phase == "walk" || phase == "hash" || phase == "map" || phase == "load" || phase == "group") return "files";
  if (phase == "dedupe") return "rounds";
  return "items";
}

size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string FirstColumns(const std::string& s, size_t columns) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == columns) return s.substr(0, i);
  return s;
}

namespace {

// The parts of a progress line, joined by Join.
struct LineParts {
  std::string head, bytes, count, rate, eta;
  std::string Join() const {
    std::string line = head;
    for (const std::string* p : {&bytes, &count, &rate, &eta})
      if (!p->empty()) line += (line.size() == head.size() ? "" : ", ") + *p;
    return line;
  }
};

LineParts Parts(const std::string& tool, const ProgressSnapshot& s, double elapsed_s) {
  const char* tilde = s.estimate ? "~" : "";
  const std::string items = std::string(" ") + ItemsOf(s.phase);
  LineParts p;
  p.head = tool + " " + s.phase + ": ";
  // Bytes: "X / ~T", or "X" alone with no byte total; nothing when no byte is counted.
  if (s.done_bytes > 0 || s.total_bytes > 0) {
    p.bytes = FormatSize(s.done_bytes);
    if (s.total_bytes > 0 && !PastEstimate(s)) p.bytes += " / " + std::string(tilde) + FormatSize(s.total_bytes);
  }
  if (s.total_items > 0 && !PastEstimate(s))
    p.count = Printf(s.estimate ? "%llu/~%llu" : "%llu/%llu", s.done_items, s.total_items) + items;
  else
    p.count = Printf("%llu", s.done_items) + items;
  if (PastEstimate(s)) {
    p.count += " (more than the estimate of " + std::string(tilde) +
               (ByBytes(s) ? FormatSize(s.total_bytes) : Printf("%llu", s.total_items) + items) + ")";
  } else if (HasTotal(s)) {
    double pct = 100.0 * Fraction(s);
    if (s.estimate) pct = std::min(pct, 99.0);
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%s%.1f%%)", tilde, pct);
    p.count += buf;
  }
  if (elapsed_s >= kMinElapsed && s.done_bytes > 0)
    p.rate = FormatSize(uint64_t(double(s.done_bytes) / elapsed_s)) + "/s";
  const double eta = ProgressEta(s, elapsed_s);
  if (eta >= 0) p.eta = "ETA " + std::string(tilde) + FormatDuration(eta);
  return p;
}

}  // namespace

std::string ProgressLine(const std::string& tool, const ProgressSnapshot& s, double elapsed_s, size_t width) {
  LineParts p = Parts(tool, s, elapsed_s);
  std::string line = p.Join();
  for (std::string* drop : {&p.rate, &p.bytes, &p.eta}) {
    if (width == 0 || Columns(line) <= width) break;
    drop->clear();
    line = p.Join();
  }
  return width && Columns(line) > width ? FirstColumns(line, width) : line;
}

}  // namespace oans::cli
