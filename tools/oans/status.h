// oans status for people: a state directory's status (lib/run/record.h, StatusOf) as a
// few lines per generation.
#pragma once

#include "lib/base/json.h"

namespace oans::cli {

// Prints on stdout the roots, a run in progress and each generation's record of s.
void PrintStatus(const Json& s);

}  // namespace oans::cli
