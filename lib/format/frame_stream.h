// A stream of Cap'n Proto messages in zstd frames, the container of both file formats
// (docs/format.md). Each message is written as its own zstd frame. The reader bounds
// every allocation by the data actually present, so a damaged or hostile length field
// cannot make it allocate more than the file holds.
//
// OutputFile writes a result atomically: to a temporary name beside the target, renamed
// over it only when complete, so a crash, a full disk or a closed pipe never leaves a file
// that looks complete.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/format/zstd_stream.h"

namespace oans {

class OutputFile {
 public:
  ~OutputFile();
  // path "-" is standard output, which is refused when it is a terminal.
  static Result<std::unique_ptr<OutputFile>> Open(const std::string& path);
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // fsyncs and renames the temporary file into place (no-op for stdout).
  Status Commit();

 private:
  OutputFile() = default;
  int fd_ = -1;
  std::string name_, path_, tmp_;
  bool committed_ = false;
  bool direct_ = false;  // a device or FIFO, written in place
};

class InputFile {
 public:
  ~InputFile();
  // path "-" is standard input.
  static Result<std::unique_ptr<InputFile>> Open(const std::string& path);
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }

 private:
  InputFile() = default;
  int fd_ = -1;
  bool owned_ = false;
  std::string name_;
};

// Copies standard input into an anonymous memory file and returns a path that opens it,
// so input from a pipe can be read more than once (validated, then used).
Result<std::string> SpoolStdin();

class FrameWriter {
 public:
  FrameWriter(int fd, std::string name) : z_(fd, std::move(name)) {}
  Status Write(capnp::MessageBuilder& msg);
  uint64_t bytes_out() const { return z_.bytes_out(); }

 private:
  ZstdWriter z_;
};

class FrameReader {
 public:
  // Largest message accepted; larger length fields are reported as damage.
  static constexpr size_t kMaxMessageBytes = size_t(1) << 30;

  FrameReader(int fd, std::string name) : z_(fd, name), name_(std::move(name)) {}
  // Reads the next message's words. Returns false at a clean end of stream. A message is
  // handed out only after its frame's content checksum has been checked; a message must
  // fill its frame exactly.
  Result<bool> Next(kj::Array<capnp::word>* words);
  const std::string& name() const { return name_; }
  // Byte offset in the file of the frame of the last message read (or being read).
  uint64_t offset() const { return offset_; }
  // After an error from Next: true when the file was cut (it ends inside a frame, as an
  // interrupted writer leaves it), false when it is damaged.
  bool cut() const { return z_.cut(); }
  // Where the complete frames end: the offset of the frame that was cut, or at a clean
  // end, the file's length.
  uint64_t offset_of_cut() const { return z_.frame_offset(); }
  // A damage message naming the file and the offset of the current frame.
  Status Damaged(const std::string& what) const;
  // Reader options for a message of `words` words.
  static capnp::ReaderOptions Options(size_t words);

 private:
  ZstdReader z_;
  std::string name_;
  uint64_t offset_ = 0;
};

}  // namespace oans
