#include "lib/base/meminfo.h"

#include <cstdio>

namespace oans {

uint64_t MemAvailableBytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "re");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
  std::fclose(f);
  return found ? uint64_t(kib) << 10 : 0;
}

}  // namespace oans
