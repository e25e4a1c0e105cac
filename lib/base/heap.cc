#include "lib/base/heap.h"

#include <malloc.h>

namespace oans {

void SetUpHeap() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

KeepFreedTop::KeepFreedTop() {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 2 << 20);
#endif
}

KeepFreedTop::~KeepFreedTop() {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
#endif
}

void ReturnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace oans
