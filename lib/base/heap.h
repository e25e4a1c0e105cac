// Freed memory given back to the system. glibc keeps the pages of freed blocks for the
// next allocations, in the heap of each thread that made them; a phase that held much
// for a short while (a read-ahead's lists, a pass's records) would leave the process's
// resident size at that phase's peak for the rest of the run.
#pragma once

namespace oans {

// Returns the unused pages of every heap to the system (malloc_trim). Costs a walk of
// the free blocks: call it between phases, not per item.
void ReturnFreedMemory();

}  // namespace oans
