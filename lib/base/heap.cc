#include "lib/base/heap.h"

#include <malloc.h>

namespace oans {

void ReturnFreedMemory() { malloc_trim(0); }

}  // namespace oans
