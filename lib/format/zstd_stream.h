// zstd compression over file descriptors. The writer ends a zstd frame (with its content
// checksum) whenever asked, so every index batch or plan round is its own checksummed
// frame: damage is caught at the frame it hits, and a file cut short still yields every
// frame written before the cut. The reader tells a clean end (at a frame boundary) from a
// cut inside a frame.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

class ZstdWriter {
 public:
  // Writes to fd (not owned). `name` is used in messages.
  ZstdWriter(int fd, std::string name, int level = 3);
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
  // Reads from fd (not owned). `name` is used in messages.
  ZstdReader(int fd, std::string name);
  ~ZstdReader();
  ZstdReader(const ZstdReader&) = delete;
  ZstdReader& operator=(const ZstdReader&) = delete;

  // Fills exactly len bytes. Returns false with an OK status at a clean end of stream
  // when nothing at all was read; a partial fill is an error (truncated).
  Result<bool> ReadExact(void* buf, size_t len);
  // True when the last ReadExact ended exactly at a frame boundary.
  bool at_frame_boundary() const { return frame_done_ && out_pos_ == out_len_; }
  uint64_t bytes_in() const { return bytes_in_; }

 private:
  Status Refill();
  int fd_;
  std::string name_;
  ZSTD_DCtx* dctx_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  bool eof_ = false;
  bool output_pending_ = false;  // the last call filled its output: call again
  bool frame_done_ = true;  // no frame started yet
  uint64_t bytes_in_ = 0;
  std::vector<char> out_;
  size_t out_pos_ = 0, out_len_ = 0;
};

}  // namespace oans
