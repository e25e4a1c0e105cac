#include "lib/apply/measure.h"

#include <algorithm>

namespace oans {

void SpaceMeter::Before(Sys& sys, const PlanHeader& h) {
  ok_ = !h.roots.empty();
  for (const auto& root : h.roots) {
    auto fd = Own(sys, sys.OpenDirNoFollow(root));
    if (!fd.ok()) fd = Own(sys, sys.OpenNoFollow(root));
    if (!fd.ok()) {
      ok_ = false;
      continue;
    }
    auto id = sys.Identify(fd->get());
    const std::string uuid = id.ok() ? id->uuid : root;
    if (std::any_of(fs_.begin(), fs_.end(), [&](const Fs& f) { return f.uuid == uuid; })) continue;
    auto use = sys.MeasureSpace(fd->get());
    if (!use.ok()) ok_ = false;
    fs_.push_back({std::move(*fd), uuid, use.ok() ? *use : SpaceUse{}});
  }
}

void SpaceMeter::After(Sys& sys, ApplyStats* s) {
  int64_t data = 0, meta = 0;
  bool split = true;
  for (const Fs& f : fs_) {
    if (!ok_) break;
    auto use = sys.MeasureSpace(f.fd.get());
    if (!use.ok()) {
      ok_ = false;
      break;
    }
    data += int64_t(f.before.data_bytes) - int64_t(use->data_bytes);
    meta += int64_t(use->metadata_bytes) - int64_t(f.before.metadata_bytes);
    split &= use->btrfs;
  }
  if (!ok_) return;
  s->space_measured = true;
  s->space_split = split;
  s->data_freed = data;
  s->metadata_grown = meta;
  s->space_approximate = SpaceApproximate(*s);
}

bool SpaceApproximate(const ApplyStats& s) {
  const int64_t shared = int64_t(s.bytes_deduped + s.bytes_linked);
  const int64_t slack = int64_t(1u << 20) + shared / 100;  // allocator rounding
  return s.data_freed > shared + slack || -s.data_freed > int64_t(s.bytes_rewritten) + slack;
}

}  // namespace oans
