// The storage behind a scan's or a plan's roots: spinning or not, which sets the scan's
// reading order and threads, the plan's round size (through the index's `spinning`) and
// whether apply opens the next round's files while a round is read.
#pragma once

#include <string>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// As `choice` says, or with kAuto detected for the devices of the roots' filesystems
// (Sys::DetectStorage: spinning if any of them spins; an SSD when none can be identified).
StorageInfo StorageOfRoots(Sys& sys, const std::vector<std::string>& roots, StorageChoice choice);

}  // namespace oans
