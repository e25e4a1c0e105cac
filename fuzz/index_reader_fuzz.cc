// libFuzzer target: arbitrary bytes as an extent index. The reader must return a Status
// (never crash, hang or allocate without bound) whatever the input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/base/paths.h"
#include "lib/format/index_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz-index", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != ssize_t(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (bool allow_truncated : {false, true}) {
    oans::IndexReadOptions o;
    o.allow_truncated = allow_truncated;
    uint64_t records = 0;
    auto r = oans::ReadIndex(
        path, o, [](const oans::IndexHeader&) { return oans::Status::Ok(); },
        [&](const oans::IndexHeader& h, std::vector<oans::FileEntry>& batch) {
          for (const auto& e : batch) {
            records += e.block_hashes.size() + e.extents.size();
            if (e.fs >= h.filesystems.size()) __builtin_trap();  // the reader must have refused it
            if (!oans::CleanAbsolutePath(e.path)) __builtin_trap();  // so too a path apply cannot open
            for (const auto& p : e.other_paths)
              if (!oans::CleanAbsolutePath(p)) __builtin_trap();
          }
          return oans::Status::Ok();
        });
    (void)r;
  }
  close(fd);
  return 0;
}
