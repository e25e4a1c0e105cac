// Freed memory given back to the system. glibc keeps the pages of freed blocks for the
// next allocations, in the heap of each thread that made them; a phase that held much
// for a short while (a read-ahead's lists, a pass's records) would leave the process's
// resident size at that phase's peak for the rest of the run.
#pragma once

namespace oans {

// Blocks of 1 MiB or more mapped on their own, whatever was freed before: glibc would
// otherwise raise that threshold each time such a block is freed, up to 32 MiB, and put
// the next ones in the heap, where they leave holes that other blocks fill and that are
// never given back. A pass's records, a read-ahead's lists and their like come and go
// in blocks of megabytes. And up to 2 MiB freed at the heap's top kept for the next
// blocks, where glibc would give back all past 128 KiB: a stream of blocks under 1 MiB
// (an index's frames read, its batches built) then took a fault for every page of each
// block (the kernel tree x 2 after its dedupe, `--storage ssd`: a followed scan's 24,000
// faults and 0.9 s, 10,500 and 0.6 s so; 2 MiB more resident). Call it first in main.
void SetUpHeap();

// Returns the unused pages of every heap to the system (malloc_trim). Costs a walk of
// the free blocks: call it between phases, not per item.
void ReturnFreedMemory();

}  // namespace oans
