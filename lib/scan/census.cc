#include "lib/scan/census.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <utility>

#include "lib/base/fd.h"
#include "lib/btrfs/backrefs.h"

namespace oans {

void RefCensus::Note(const FileEntry& e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (overflow_ || !e.error.empty()) return;
  for (const auto& x : e.extents) {
    if ((x.flags & (kExtentInline | kExtentUnknown | kExtentDelalloc)) || x.length == 0) continue;
    if (ranges_.size() >= limit_) {
      overflow_ = true;
      ranges_ = {};
      return;
    }
    // A compressed extent is named by its start alone; its length is the data's.
    ranges_.push_back({e.fs, x.physical, x.flags & kExtentEncoded ? x.physical + 1 : x.physical + x.length});
  }
}

void RefCensus::Describe(Sys& sys, IndexHeader* h) {
  std::vector<IndexSubvolume> subs(h->filesystems.size());
  bool any = false;
  for (size_t i = 0; i < h->filesystems.size(); ++i) {
    const FsRecord& f = h->filesystems[i];
    if (f.type != "btrfs") continue;
    auto fd = Own(sys, sys.OpenDirNoFollow(f.mount_point));
    if (!fd.ok()) return;
    auto facts = SubvolumeFactsOf(fd->get(), f.subvolume);
    fd->reset();
    if (!facts.ok()) return;
    subs[i] = {facts->read_only, facts->shared, facts->tree_bytes, facts->node_size, facts->metadata_copies};
    any = true;
  }
  if (!any) return;
  h->subvolumes = std::move(subs);
  h->refs_known = true;
}

Status RefCensus::Write(const IndexHeader& h, const std::atomic<bool>* stop, Observer* observer, IndexWriter* out) {
  if (!h.refs_known) return Status::Ok();
  if (overflow_) {
    observer->Notice("note: more than " + std::to_string(limit_) + " extents: their references were not " +
                     "looked up: the plan counts what it covers as freed, and leaves snapshots alone (give a larger --memory)");
    return Status::Ok();
  }
  // One filesystem by UUID: its first record stands for all its subvolumes.
  std::map<std::string, uint32_t> first;
  for (uint32_t i = 0; i < h.filesystems.size(); ++i) first.emplace(h.filesystems[i].uuid, i);
  for (auto& r : ranges_) r.fs = first[h.filesystems[r.fs].uuid];
  std::sort(ranges_.begin(), ranges_.end());
  for (size_t at = 0; at < ranges_.size();) {
    const uint32_t fs = ranges_[at].fs;
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (; at < ranges_.size() && ranges_[at].fs == fs; ++at) {
      if (!merged.empty() && ranges_[at].start <= merged.back().second)
        merged.back().second = std::max(merged.back().second, ranges_[at].end);
      else merged.push_back({ranges_[at].start, ranges_[at].end});
    }
    if (h.filesystems[fs].type != "btrfs") continue;
    const Fd fd(::open(h.filesystems[fs].mount_point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return Status::Io("opening " + h.filesystems[fs].mount_point, errno);
    std::vector<DataExtentRefs> found;
    DataExtentsOptions options;
    options.stop = [stop] { return stop && stop->load(); };
    options.look_up_all = look_up_all_;
    OANS_RETURN_IF_ERROR(DataExtentsAt(fd.get(), merged, options, &found));
    for (const auto& e : found) {
      if (!e.complete) continue;
      OANS_RETURN_IF_ERROR(out->AddExtent({fs, e.bytenr, e.disk_bytes, e.refs, e.ro_refs}));
      extents_++;
      looked_up_ += e.looked_up;
    }
  }
  ranges_ = {};
  return Status::Ok();
}

}  // namespace oans
