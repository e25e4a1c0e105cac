// Strict parsing of sizes ("4K", "128M", "1G", "1.5G"), durations ("90s", "30m", "2h")
// and rates ("50M" per second). Anything that is not a number followed by a known unit
// is rejected: "100M" is never silently 100 bytes, "10 M" and "10MB!" are errors.
#pragma once

#include <cstdint>
#include <string>

#include "lib/base/status.h"

namespace oans {

// Sizes: plain bytes or a suffix K, M, G, T, P (powers of 1024), optionally followed
// by "B" or "iB" (so "4K", "4KB", "4KiB" are 4096). Lower case accepted.
Result<uint64_t> ParseSize(const std::string& text);
// Durations: a number with s, m, h or d ("45s", "30m", "1.5h"); a bare number is seconds.
Result<uint64_t> ParseDurationSeconds(const std::string& text);
// "1.2 GiB" style rendering for messages.
std::string FormatSize(uint64_t bytes);
// FormatSize with a minus sign for a negative size.
std::string FormatSignedSize(int64_t bytes);
// "1h02m", "3m05s", "12.3s".
std::string FormatDuration(double seconds);

}  // namespace oans
