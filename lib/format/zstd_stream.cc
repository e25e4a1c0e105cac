#include "lib/format/zstd_stream.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace oans {

ZstdWriter::ZstdWriter(int fd, std::string name, int level)
    : fd_(fd), name_(std::move(name)), cctx_(ZSTD_createCCtx()), out_(ZSTD_CStreamOutSize()) {
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
  // A frame is one index batch or plan round, a few hundred KiB: a window of 512 KiB
  // finds what a larger one would, and the writer (and each reader) holds that much
  // instead of 2 MiB.
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kWindowLog);
}

ZstdWriter::~ZstdWriter() { ZSTD_freeCCtx(cctx_); }

Status ZstdWriter::WriteAll(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) return Status::Io("writing " + name_ + " (the reading end of the pipe closed)", errno);
      return Status::Io("writing " + name_, errno);
    }
    p += w;
    n -= size_t(w);
    bytes_out_ += uint64_t(w);
  }
  return Status::Ok();
}

Status ZstdWriter::Drain(ZSTD_EndDirective mode, ZSTD_inBuffer* in) {
  for (;;) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    size_t rem = ZSTD_compressStream2(cctx_, &out, in, mode);
    if (ZSTD_isError(rem)) return Status::Io(std::string("compressing ") + name_ + ": " + ZSTD_getErrorName(rem), EIO);
    OANS_RETURN_IF_ERROR(WriteAll(out_.data(), out.pos));
    bool done = (mode == ZSTD_e_continue) ? in->pos == in->size : rem == 0;
    if (done) return Status::Ok();
  }
}

Status ZstdWriter::Write(const void* data, size_t len) {
  ZSTD_inBuffer in{data, len, 0};
  frame_open_ = true;
  return Drain(ZSTD_e_continue, &in);
}

Status ZstdWriter::EndFrame() {
  if (!frame_open_) return Status::Ok();
  ZSTD_inBuffer in{nullptr, 0, 0};
  frame_open_ = false;
  return Drain(ZSTD_e_end, &in);
}

ZstdReader::ZstdReader(int fd, std::string name, uint64_t start)
    : fd_(fd), name_(std::move(name)), dctx_(ZSTD_createDCtx()), in_(ZSTD_DStreamInSize()),
      bytes_in_(start), frame_start_(start), next_frame_(start), out_(ZSTD_DStreamOutSize()) {}

ZstdReader::~ZstdReader() { ZSTD_freeDCtx(dctx_); }

Status ZstdReader::Refill() {
  for (;;) {
    ssize_t n = ::read(fd_, in_.data(), in_.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Io("reading " + name_, errno);
    }
    in_pos_ = 0;
    in_len_ = size_t(n);
    bytes_in_ += uint64_t(n);
    if (n == 0) eof_ = true;
    return Status::Ok();
  }
}

Status ZstdReader::Cut() {
  cut_ = true;
  return Status::Corrupt(name_ + " is truncated: it ends inside the frame that starts at byte " +
                         std::to_string(frame_start_) + " (the program that wrote it was probably interrupted)");
}

Status ZstdReader::Step() {
  cut_ = false;
  ZSTD_inBuffer in{in_.data(), in_len_, in_pos_};
  ZSTD_outBuffer out{out_.data(), out_.size(), 0};
  size_t rc = ZSTD_decompressStream(dctx_, &out, &in);
  if (ZSTD_isError(rc)) return Damaged(std::string("fails to decode (") + ZSTD_getErrorName(rc) + ")");
  // Only a call that made progress moves the frame state: a call that merely checked for
  // held-back output after a frame's end returns the next frame's header hint, not 0.
  const bool progress = in.pos > in_pos_ || out.pos > 0;
  in_pos_ = in.pos;
  out_pos_ = 0;
  out_len_ = out.pos;
  // 0: the frame is decoded, its checksum checked and everything flushed; zstd stops there.
  output_pending_ = out.pos == out.size && rc != 0;
  if (progress) {
    frame_done_ = (rc == 0);
    if (frame_done_) next_frame_ = consumed();
  }
  return Status::Ok();
}

Status ZstdReader::Damaged(const std::string& what) {
  cut_ = false;
  return Status::Corrupt(name_ + " is damaged: the frame at byte " + std::to_string(frame_start_) + " " + what);
}

Result<bool> ZstdReader::ReadExact(void* buf, size_t len, Frames frames) {
  char* dst = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    if (out_pos_ < out_len_) {
      size_t n = std::min(len - got, out_len_ - out_pos_);
      std::memcpy(dst + got, out_.data() + out_pos_, n);
      out_pos_ += n;
      got += n;
      continue;
    }
    if (frame_done_) {
      if (frames != Frames::kAny && (got > 0 || frames == Frames::kSame))
        return Damaged("ends inside the message it holds");
      frame_start_ = next_frame_;
    }
    // Decompress more. Call again even without new input while the last call filled
    // its output buffer: zstd may hold decoded data back.
    if (in_pos_ == in_len_ && !eof_ && !output_pending_) OANS_RETURN_IF_ERROR(Refill());
    if (in_pos_ == in_len_ && eof_ && !output_pending_) {
      if (got == 0 && frame_done_) return false;
      return Cut();
    }
    OANS_RETURN_IF_ERROR(Step());
  }
  return true;
}

Status ZstdReader::FinishFrame() {
  while (!(frame_done_ && out_pos_ == out_len_)) {
    if (out_pos_ < out_len_) return Damaged("holds more data than its message");
    if (in_pos_ == in_len_ && !eof_ && !output_pending_) OANS_RETURN_IF_ERROR(Refill());
    if (in_pos_ == in_len_ && eof_ && !output_pending_) return Cut();
    OANS_RETURN_IF_ERROR(Step());
  }
  return Status::Ok();
}

}  // namespace oans
