// One progress line for a terminal, from a snapshot and the phase's elapsed time. Never
// "0 B / 0 B" or an unknown ETA: what is not known yet is left out.
#pragma once

#include <string>

#include "lib/base/observer.h"

namespace oans::cli {

// "oans-scan walk: 1.2 GiB / ~40 GiB, 1200/~9000 files (~3.0%), 300 MiB/s, ETA ~2m10s".
// Byte figures appear when bytes are known, counts always, named by what the phase
// counts (files, rounds); the fraction, percentage and ETA only with a total. An estimate
// is marked "~" and stays below 100% until the phase sends exact totals; past its
// estimate the line says so instead of a percentage. With a width, the line keeps below
// it: the rate goes first, then the bytes, then the ETA; what is still too long is cut.
std::string ProgressLine(const std::string& tool, const ProgressSnapshot& s, double elapsed_s, size_t width = 0);

// What a phase's items are: "files" for walk, hash, load and group, "rounds" for
// dedupe, "items" for any other.
const char* ItemsOf(const std::string& phase);

// Columns a UTF-8 string takes (one per character; no wide characters assumed).
size_t Columns(const std::string& s);

// The first columns of s, cut at a character's start.
std::string FirstColumns(const std::string& s, size_t columns);

// Seconds left at the current rate, or -1 when not known (no total, no rate yet, or
// past an estimate). 0 when the phase's exact totals are reached.
double ProgressEta(const ProgressSnapshot& s, double elapsed_s);

}  // namespace oans::cli
