#include "lib/format/frame_ahead.h"

namespace oans {

FrameReadAhead::FrameReadAhead(FrameReader& frames, size_t depth)
    : frames_(frames), depth_(depth < 1 ? 1 : depth), thread_([this] { Run(); }) {}

FrameReadAhead::~FrameReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void FrameReadAhead::Run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
      if (stop_) return;
    }
    Frame f;
    auto next = frames_.Next(&f.words);
    f.offset = frames_.offset();
    f.end_offset = frames_.end_offset();
    f.offset_of_cut = frames_.offset_of_cut();
    if (!next.ok()) {
      f.status = next.status();
      f.cut = frames_.cut();
    } else {
      f.end = !*next;
    }
    const bool last = !f.status.ok() || f.end;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(f));
    }
    changed_.notify_all();
    if (last) return;
  }
}

FrameReadAhead::Frame FrameReadAhead::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (done_) {
    Frame end;
    end.end = true;
    return end;
  }
  changed_.wait(lock, [&] { return !ready_.empty(); });
  Frame f = std::move(ready_.front());
  ready_.pop_front();
  done_ = !f.status.ok() || f.end;
  lock.unlock();
  changed_.notify_all();
  return f;
}

}  // namespace oans
