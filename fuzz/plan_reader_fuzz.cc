// libFuzzer target: arbitrary bytes as a dedupe plan. Validation and reading must return
// a Status whatever the input, and every index a round hands out must be in range.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/format/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz-plan", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != ssize_t(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  (void)oans::ValidatePlan(path);
  auto p = oans::PlanReader::Open(path);
  if (p.ok()) {
    oans::PlanRound round;
    for (int i = 0; i < 100000; ++i) {
      auto more = (*p)->Next(&round);
      if (!more.ok() || !*more) break;
      for (const auto& op : round.ops) {
        if (op.source >= round.files.size() || op.dests.empty() || op.dests.size() > 127) __builtin_trap();
        for (const auto& d : op.dests)
          if (d.file >= round.files.size()) __builtin_trap();
      }
    }
  }
  close(fd);
  return 0;
}
