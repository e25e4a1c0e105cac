// One progress line for a terminal, from a snapshot and the phase's elapsed time. Never
// "0 B / 0 B" or an unknown ETA: what is not known yet is left out.
#pragma once

#include <string>

#include "lib/base/observer.h"

namespace oans::cli {

// "oans-scan walk: 1.2 GiB / ~40 GiB (~3.0%), 1200/~9000 items, 300 MiB/s, ETA ~2m10s".
// Byte figures appear when bytes are known, counts always; the fraction, percentage and
// ETA only with a total. An estimate is marked "~" and stays below 100% until the phase
// sends exact totals; past its estimate the line says so instead of a percentage.
std::string ProgressLine(const std::string& tool, const ProgressSnapshot& s, double elapsed_s);

// Seconds left at the current rate, or -1 when not known (no total, no rate yet, or
// past an estimate). 0 when the phase's exact totals are reached.
double ProgressEta(const ProgressSnapshot& s, double elapsed_s);

}  // namespace oans::cli
