// The storage behind a plan's roots: spinning or not, which sets whether apply opens the
// next round's files while a round is read. (The scan measures the devices of the
// filesystems it identifies, lib/scan/scan.cc, and records it in the index.)
#pragma once

#include <string>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// As `choice` says, or with kAuto detected for the devices of the roots' filesystems
// (Sys::DetectStorage: spinning if any of them spins; an SSD when none can be identified).
StorageInfo StorageOfRoots(Sys& sys, const std::vector<std::string>& roots, StorageChoice choice);

}  // namespace oans
