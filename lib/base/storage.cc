#include "lib/base/storage.h"

#include <algorithm>

#include "lib/base/fd.h"

namespace oans {

StorageInfo StorageOfRoots(Sys& sys, const std::vector<std::string>& roots, StorageChoice choice) {
  if (choice != StorageChoice::kAuto) {
    StorageInfo s;
    s.kind = choice == StorageChoice::kHdd ? StorageKind::kHdd : StorageKind::kSsd;
    s.reason = "set by --storage";
    return s;
  }
  std::vector<std::string> devices;
  for (const auto& root : roots) {
    auto fd = Own(sys, sys.OpenNoFollow(root));
    if (!fd.ok()) continue;
    auto id = sys.Identify(fd->get());
    if (id.ok())
      for (const auto& d : id->devices)
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  if (devices.empty()) {
    StorageInfo s;
    s.reason = "no block device found for the roots";
    return s;
  }
  return sys.DetectStorage(devices);
}

}  // namespace oans
