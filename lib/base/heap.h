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
// in blocks of megabytes. Call it first in main.
void SetUpHeap();

// While it lives, up to 2 MiB freed at the top of each heap is kept for the next
// blocks, where glibc gives back all past 128 KiB (its default, which SetUpHeap leaves
// fixed). Without it, a stream of blocks under 1 MiB gives each one back when freed and
// takes a fault for every page of the next: a followed scan reading an index's frames
// and building its batches (the kernel tree x 2 after its dedupe, `--storage ssd`:
// 24,000 faults and 0.9 s, then 10,500 and 0.6 s, 2 MiB more resident). For a phase of
// one or two threads only: every thread's heap may keep its 2 MiB (set for a walk, the
// cold scan's peak rose from 45 to 63 MiB).
class KeepFreedTop {
 public:
  KeepFreedTop();
  ~KeepFreedTop();
  KeepFreedTop(const KeepFreedTop&) = delete;
  KeepFreedTop& operator=(const KeepFreedTop&) = delete;
};

// Returns the unused pages of every heap to the system (malloc_trim). Costs a walk of
// the free blocks: call it between phases, not per item.
void ReturnFreedMemory();

}  // namespace oans
