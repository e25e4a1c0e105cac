#include "lib/scan/reading.h"

#include <fcntl.h>

#include "lib/base/fsinfo.h"
#include "lib/base/storage.h"

namespace oans {

Reading ChooseReading(Sys& sys, const ScanOptions& o, const std::vector<std::string>& roots, Filesystems* filesystems) {
  for (uint32_t i = 0; i < roots.size(); ++i) {
    auto st = sys.StatAt(AT_FDCWD, roots[i]);
    if (st.ok()) filesystems->Of(st->dev, -1, roots[i], i);
  }
  Reading r;
  if (o.storage == StorageChoice::kAuto) {
    r.storage = sys.DetectStorage(filesystems->devices());
  } else {
    r.storage.kind = o.storage == StorageChoice::kHdd ? StorageKind::kHdd : StorageKind::kSsd;
    r.storage.reason = "set by --storage";
  }
  const StoragePolicy& policy = PolicyFor(r.storage.kind);
  r.threads = o.io_threads > 0 ? o.io_threads : policy.scan_readers;
  filesystems->SetSearchThreads(r.threads);
  r.order = o.order != ReadOrder::kAuto ? o.order : (policy.physical_order ? ReadOrder::kPhysical : ReadOrder::kNone);
  return r;
}

std::string DescribeReading(const Reading& r) {
  return "storage: " + std::string(StorageKindName(r.storage.kind)) + " (" + r.storage.reason + "); " +
         std::to_string(r.threads) + " reader thread(s), " + ReadOrderName(r.order) + " order";
}

const char* ReadOrderName(ReadOrder o) {
  switch (o) {
    case ReadOrder::kPhysical: return "physical";
    case ReadOrder::kInode: return "inode";
    case ReadOrder::kNone: return "none";
    default: return "auto";
  }
}

}  // namespace oans
