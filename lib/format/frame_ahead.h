// FrameReader with read-ahead: another thread reads and decompresses the next frames
// while the caller decodes the one it was given, so zstd and the decoding run at once.
// One caller thread; at most `depth` messages wait, so memory stays bounded by a few
// frames. Every message is handed out with what FrameReader said of its place in the
// file when that message was read.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "lib/format/frame_stream.h"

namespace oans {

class FrameReadAhead {
 public:
  struct Frame {
    Status status;       // Next's error, if any; the reads stopped there
    bool end = false;    // a clean end of stream
    kj::Array<capnp::word> words;
    uint64_t offset = 0;         // FrameReader::offset()
    uint64_t end_offset = 0;     // FrameReader::end_offset()
    bool cut = false;            // after an error: FrameReader::cut()
    uint64_t offset_of_cut = 0;  // FrameReader::offset_of_cut()
  };

  // Reads from `frames` (not owned; used by the reading thread alone until destruction).
  explicit FrameReadAhead(FrameReader& frames, size_t depth = 4);
  ~FrameReadAhead();  // stops the reads and waits for them
  FrameReadAhead(const FrameReadAhead&) = delete;
  FrameReadAhead& operator=(const FrameReadAhead&) = delete;

  // The next message, an error, or the end; after an error or the end, only the end.
  Frame Next();

 private:
  void Run();
  FrameReader& frames_;
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Frame> ready_;
  bool stop_ = false;  // the caller is gone
  bool done_ = false;  // an error or the end was handed out
  std::thread thread_;
};

}  // namespace oans
