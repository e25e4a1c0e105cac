// The dedupe plan: rounds of FIDEDUPERANGE operations, each round reading at most
// --round-size bytes, in the order they are to run. PlanWriter streams rounds; PlanReader
// validates magic, version, checksums, every index inside a round and the trailer, and
// yields one round at a time. Format: format/plan.capnp, docs/format.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/format/frame_stream.h"
#include "lib/format/index_file.h"

namespace oans {

// Bytes read per round (sources plus destinations) unless a plan says otherwise.
inline constexpr uint64_t kRoundSize = 32u << 20;

struct PlanHeader {
  uint32_t format_version = kPlanFormatVersion;
  std::string tool_version;
  int64_t created_ns = 0;
  std::vector<std::string> roots;
  std::vector<FsRecord> filesystems;
  uint64_t round_size = kRoundSize;
  uint32_t block_size = 128 * 1024;
  std::vector<std::string> indexes;
  std::vector<std::string> command_line;
  uint64_t rounds = 0, groups = 0, duplicate_bytes = 0, shared_bytes = 0, planned_bytes = 0;
  uint64_t rewrite_bytes = 0;
  // The roots' storage as the indexes recorded it; none when not recorded.
  std::optional<StorageKind> storage;
};

struct PlanFileRef {
  std::string path;
  uint32_t fs = 0;
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
  uint32_t nlink = 0;                    // when scanned; 0 in an older plan
  std::vector<std::string> other_paths;  // its other hardlinks the scan saw
  bool unread = false;  // paired by size alone (the scan did not read it): apply's compare decides
};

struct PlanDest {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t physical = 0;
};

struct PlanOp {
  uint32_t source = 0;
  uint64_t offset = 0, length = 0, physical = 0;
  std::vector<PlanDest> dests;
};

// Whether a destination of `op` is its source range itself: the range is rewritten.
inline bool IsRewrite(const PlanOp& op, const PlanDest& d) { return d.file == op.source && d.offset == op.offset; }

struct PlanRound {
  uint64_t index = 0;
  std::vector<PlanFileRef> files;
  std::vector<PlanOp> ops;
  uint64_t bytes = 0;
};

class PlanWriter {
 public:
  explicit PlanWriter(OutputFile* out) : frames_(out->fd(), out->name()) {}
  Status WriteHeader(const PlanHeader& header);
  Status AddRound(const PlanRound& round);
  // The same, emptying `round` once it is encoded, before it is compressed and written.
  Status AddRound(PlanRound&& round);
  Status Finish();

 private:
  void BuildRound(const PlanRound& round, capnp::MessageBuilder& msg);
  FrameWriter frames_;
  uint64_t ops_ = 0, rounds_ = 0, bytes_ = 0;
};

class PlanReader {
 public:
  // Opens and reads the header ("-" is standard input).
  static Result<std::unique_ptr<PlanReader>> Open(const std::string& path);
  const PlanHeader& header() const { return header_; }
  // Next round; false after the trailer (which is checked against what was read).
  Result<bool> Next(PlanRound* round);
  const std::string& name() const { return in_->name(); }

 private:
  PlanReader() = default;
  std::unique_ptr<InputFile> in_;
  std::unique_ptr<FrameReader> frames_;
  PlanHeader header_;
  uint64_t ops_ = 0, rounds_ = 0;
  bool done_ = false;
};

// Reads a whole plan through to its trailer: apply checks the plan is complete and
// intact before it touches any file. `each`, when set, is given every round.
Status ValidatePlan(const std::string& path, const std::function<void(const PlanRound&)>& each = nullptr);

}  // namespace oans
