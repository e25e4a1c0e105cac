#include "lib/base/heap.h"

#include <malloc.h>

namespace oans {

void ReturnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace oans
