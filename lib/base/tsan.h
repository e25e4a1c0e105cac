// ThreadSanitizer annotations for the orderings libtbb gives but does not show it
// (Debian's libtbb is built without ThreadSanitizer): a task runs after it was spawned,
// task_group::wait returns after every task has ended, a pipeline item is made before the
// next stage uses it, one serial stage's runs follow each other, and a pipeline starts
// after the code before it and ends before the code after it. Each annotation states one
// of these orderings at the place TBB provides it, nothing more; outside ThreadSanitizer
// builds they are empty.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define OANS_TSAN_RELEASE(p) __tsan_release((void*)(p))
#define OANS_TSAN_ACQUIRE(p) __tsan_acquire((void*)(p))
#else
#define OANS_TSAN_RELEASE(p) ((void)(p))
#define OANS_TSAN_ACQUIRE(p) ((void)(p))
#endif

namespace oans {

// The orderings of one tbb::parallel_pipeline, for the annotations above: `start`
// (released before the pipeline, acquired by every stage), and one object per serial
// stage (acquired when a run of it starts, released when it ends; the code after the
// pipeline acquires the last one).
struct PipelineOrder {
  char start = 0;
  char stage[4] = {};
};

// Acquires on construction, releases on destruction: one run of a serial stage.
class SerialRun {
 public:
  SerialRun(const PipelineOrder& o, int k) : p_(&o.stage[k]) {
    OANS_TSAN_ACQUIRE(&o.start);
    OANS_TSAN_ACQUIRE(p_);
  }
  ~SerialRun() { OANS_TSAN_RELEASE(p_); }
  SerialRun(const SerialRun&) = delete;
  SerialRun& operator=(const SerialRun&) = delete;

 private:
  const char* p_;
};

}  // namespace oans
