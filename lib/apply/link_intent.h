// The record of a hidden hardlink name while hardlink mode makes it (lib/apply/hardlink.h),
// kept in the journal so that the next run removes one a killed run left behind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// A hidden link being made: dir/tmp names the source's inode until it is exchanged with
// the destination's name, then the destination's old inode until it is removed.
struct LinkIntent {
  std::string dir;  // the destination's directory
  std::string tmp;  // the hidden name in it
  uint64_t src_ino = 0;
  uint64_t dst_ino = 0, dst_size = 0;
  int64_t dst_mtime_ns = 0, dst_ctime_ns = 0;
};

// Where intents are recorded durably (the journal). Hardlink mode records a round's
// intents at once, before making any of its links, and ends them at once after: one
// durable write each, not two per link. An intent ended without its link made, or
// recorded and never made, leaves nothing for recovery to find (RecoverLink).
class LinkIntentLog {
 public:
  virtual ~LinkIntentLog() = default;
  virtual Status Begin(const LinkIntent& intent) = 0;
  virtual Status End(const LinkIntent& intent) = 0;
  virtual Status BeginAll(const std::vector<LinkIntent>& intents) {
    for (const auto& in : intents) OANS_RETURN_IF_ERROR(Begin(in));
    return Status::Ok();
  }
  virtual Status EndAll(const std::vector<LinkIntent>& intents) {
    for (const auto& in : intents) OANS_RETURN_IF_ERROR(End(in));
    return Status::Ok();
  }
};

}  // namespace oans
