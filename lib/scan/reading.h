// How a scan reads, decided once per scan from its options and the storage behind the
// roots' filesystems: the storage kind (measured, or as --storage says), the reader
// threads and the read order.
#pragma once

#include <string>
#include <vector>

#include "lib/base/sys.h"
#include "lib/scan/filesystems.h"
#include "lib/scan/scan.h"

namespace oans {

struct Reading {
  StorageInfo storage;
  int threads = 1;
  ReadOrder order = ReadOrder::kNone;
};

// Identifies the roots' filesystems in `filesystems` (their devices are measured) and
// sets its search threads to the readers'.
Reading ChooseReading(Sys& sys, const ScanOptions& o, const std::vector<std::string>& roots, Filesystems* filesystems);

// "storage: hdd (...); 1 reader thread(s), physical order", said once per scan.
std::string DescribeReading(const Reading& r);

}  // namespace oans
