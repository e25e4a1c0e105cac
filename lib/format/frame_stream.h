// A stream of Cap'n Proto messages in zstd frames, the container of both file formats
// (docs/format.md). Each message is written as its own zstd frame. The reader bounds
// every allocation by the data actually present, so a damaged or hostile length field
// cannot make it allocate more than the file holds.
//
// OutputFile writes a result atomically: to an unnamed file in the target's directory
// (O_TMPFILE), linked under the target's name only when complete, so a crash, a kill, a
// full disk or a closed pipe never leaves a file that looks complete, nor any temporary
// file. It never follows a symlink at the target's name (another user could have planted
// one pointing at a device or a file of yours) and writes in place only into a character
// device or FIFO that the name itself is (/dev/null, a named pipe).
#pragma once

#include <capnp/message.h>
#include <kj/array.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <system_error>
#include <thread>

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
  // fsyncs and puts the file in place (no-op for stdout).
  Status Commit();

  // Where O_TMPFILE is not supported, the temporary file has a name,
  // ".TARGET.oans-tmp-PID-N"; this removes those in `dirfd` whose writer process is gone
  // (a killed run), if they are regular files of this user. Every Open calls it.
  static void RemoveStaleTemporaries(int dirfd, const std::string& target);

 private:
  OutputFile() = default;
  Status OpenInPlace();
  Status OpenTemporary();
  Status LinkIntoPlace();
  int fd_ = -1;
  int dirfd_ = -1;
  std::string name_, path_, base_, tmp_;
  bool committed_ = false;
  bool direct_ = false;   // a device or FIFO, written in place
  bool unnamed_ = false;  // O_TMPFILE, linked on commit
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

// Keeps `fd` open for the life of the process and returns a path that opens that very
// file again ("/proc/self/fd/N"), whatever happens to its name meanwhile; InputFile
// names it `name` in messages. For a file checked once and then read more than once.
std::string PinInput(int fd, const std::string& name);

// Writes each message as a frame. `behind`: another thread compresses and writes a frame
// while the caller builds the next; Wait() returns when it is written. Wait before
// anything else writes to the descriptor or reads what was written, and before the file
// is committed or closed. An error sticks: every later call returns it.
class FrameWriter {
 public:
  FrameWriter(int fd, std::string name, bool behind = false) : z_(fd, std::move(name)), behind_(behind) {}
  ~FrameWriter();
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;
  Status Write(capnp::MessageBuilder& msg);
  // Waits for the frame being written behind; the first error met, if any.
  Status Wait();
  // After Wait.
  uint64_t bytes_out() const { return z_.bytes_out(); }

 private:
  Status WriteNow(const kj::Array<capnp::word>& words);
  ZstdWriter z_;
  bool behind_;
  std::thread worker_;
  kj::Array<capnp::word> in_flight_;  // the worker's frame
  Status status_;                     // the first error
  bool out_of_memory_ = false;        // the worker could not allocate
};

class FrameReader {
 public:
  // Largest message accepted; larger length fields are reported as damage.
  static constexpr size_t kMaxMessageBytes = size_t(1) << 30;

  // Reads from fd (not owned) from where it stands, byte `start` of the file.
  FrameReader(int fd, std::string name, uint64_t start = 0)
      : z_(fd, name, start), name_(std::move(name)), offset_(start) {}
  // Reads the next message's words. Returns false at a clean end of stream. A message is
  // handed out only after its frame's content checksum has been checked; a message must
  // fill its frame exactly.
  Result<bool> Next(kj::Array<capnp::word>* words);
  const std::string& name() const { return name_; }
  // Byte offset in the file of the frame of the last message read (or being read).
  uint64_t offset() const { return offset_; }
  // The offset just past the frame of the last message read (checked).
  uint64_t end_offset() const { return z_.frame_end(); }
  // After an error from Next: true when the file was cut (it ends inside a frame, as an
  // interrupted writer leaves it), false when it is damaged.
  bool cut() const { return z_.cut(); }
  // Where the complete frames end: the offset of the frame that was cut, or at a clean
  // end, the file's length.
  uint64_t offset_of_cut() const { return z_.frame_offset(); }
  // A damage message naming the file and the offset of the current frame.
  Status Damaged(const std::string& what) const;
  // The same, of the frame at byte `offset` (an offset() read before).
  Status DamagedAt(uint64_t offset, const std::string& what) const;
  // Reader options for a message of `words` words.
  static capnp::ReaderOptions Options(size_t words);

 private:
  ZstdReader z_;
  std::string name_;
  uint64_t offset_ = 0;
};

}  // namespace oans
