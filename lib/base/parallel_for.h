// tbb::parallel_for over [0, n), with the orderings it gives (the bodies run after the
// code before it, the code after it runs after every body) stated for ThreadSanitizer
// (lib/base/tsan.h). An exception thrown by a body reaches the caller.
#pragma once

#include <tbb/parallel_for.h>

#include <cstddef>

#include "lib/base/tsan.h"

namespace oans {

template <typename F>
void ParallelFor(size_t n, const F& body) {
  char start = 0, done = 0;
  OANS_TSAN_RELEASE(&start);
  tbb::parallel_for(size_t(0), n, [&](size_t i) {
    OANS_TSAN_ACQUIRE(&start);
    body(i);
    OANS_TSAN_RELEASE(&done);
  });
  OANS_TSAN_ACQUIRE(&done);
}

}  // namespace oans
