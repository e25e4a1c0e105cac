// zstd compression over file descriptors. The writer ends a zstd frame (with its content
// checksum) whenever asked, so every index batch or plan round is its own checksummed
// frame: damage is caught at the frame it hits, and a file cut short still yields every
// frame written before the cut. The reader tells a clean end (at a frame boundary) from a
// cut inside a frame (an interrupted writer) and from damage (a frame that fails to
// decode or whose content checksum is wrong); errors name the byte offset of the frame.
// Data of a frame is trustworthy only once FinishFrame() has checked its checksum.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

class ZstdWriter {
 public:
  static constexpr int kWindowLog = 19;
  // Writes to fd (not owned). `name` is used in messages.
  ZstdWriter(int fd, std::string name, int level = 1);
  ~ZstdWriter();
  ZstdWriter(const ZstdWriter&) = delete;
  ZstdWriter& operator=(const ZstdWriter&) = delete;

  Status Write(const void* data, size_t len);
  // Ends the current frame and flushes it to the descriptor.
  Status EndFrame();
  uint64_t bytes_out() const { return bytes_out_; }

 private:
  Status Drain(ZSTD_EndDirective mode, ZSTD_inBuffer* in);
  Status WriteAll(const char* p, size_t n);
  int fd_;
  std::string name_;
  ZSTD_CCtx* cctx_;
  std::vector<char> out_;
  uint64_t bytes_out_ = 0;
  bool frame_open_ = false;
};

class ZstdReader {
 public:
  // Reads from fd (not owned) from where it stands, which is byte `start` of the file
  // (offsets count from the file's start). `name` is used in messages.
  ZstdReader(int fd, std::string name, uint64_t start = 0);
  ~ZstdReader();
  ZstdReader(const ZstdReader&) = delete;
  ZstdReader& operator=(const ZstdReader&) = delete;

  // Where the bytes of one ReadExact may come from: any frames; one frame (a new one when
  // the last is finished); or only the frame being read.
  enum class Frames { kAny, kOne, kSame };
  // Fills exactly len bytes. Returns false with an OK status at a clean end of stream
  // when nothing at all was read; a partial fill is an error (truncated), and so is, with
  // kOne or kSame, a frame that ends before len bytes (damaged). The bytes may come from a
  // frame whose checksum has not been checked yet: see FinishFrame.
  Result<bool> ReadExact(void* buf, size_t len, Frames frames = Frames::kAny);
  // Reads the rest of the current frame, which must hold nothing more, and so checks its
  // content checksum: only then do the bytes read from it count. An error when the frame
  // holds more data (damaged), fails its checksum (damaged) or the file ends (cut).
  Status FinishFrame();
  // True when the last ReadExact ended exactly at a frame boundary.
  bool at_frame_boundary() const { return frame_done_ && out_pos_ == out_len_; }
  uint64_t bytes_in() const { return bytes_in_; }
  // Offset in the compressed file of the frame being read (or of the next one).
  uint64_t frame_offset() const { return frame_start_; }
  // Once a frame is finished: the offset just past it.
  uint64_t frame_end() const { return next_frame_; }
  // After an error: true when it was a cut (the file ends inside a frame, as a writer that
  // was interrupted leaves it), false when the data is damaged.
  bool cut() const { return cut_; }

 private:
  Status Refill();
  // One decompression call; an error names the frame's offset.
  Status Step();
  Status Cut();
  Status Damaged(const std::string& what);
  uint64_t consumed() const { return bytes_in_ - (in_len_ - in_pos_); }
  int fd_;
  std::string name_;
  ZSTD_DCtx* dctx_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  bool eof_ = false;
  bool output_pending_ = false;  // the last call filled its output: call again
  bool frame_done_ = true;  // no frame started yet
  bool cut_ = false;
  uint64_t bytes_in_ = 0;
  uint64_t frame_start_ = 0, next_frame_ = 0;
  std::vector<char> out_;
  size_t out_pos_ = 0, out_len_ = 0;
};

}  // namespace oans
