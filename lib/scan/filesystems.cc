#include "lib/scan/filesystems.h"

#include <algorithm>
#include <cerrno>
#include <thread>

#include "lib/base/fd.h"

namespace oans {

uint32_t Filesystems::Of(uint64_t dev, int fd, const std::string& path, uint32_t root) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = of_dev_.find(dev);
  if (it != of_dev_.end()) return it->second;
  FsRecord r;
  r.dev = dev;
  Fd own;
  if (fd < 0) {
    auto o = Own(sys_, sys_.OpenNoFollow(path));
    if (o.ok()) own = std::move(*o), fd = own.get();
  }
  Result<FsIdentity> id = fd >= 0 ? sys_.Identify(fd) : Result<FsIdentity>(Status::Invalid("not open"));
  Changes changes;
  if (id.ok()) {
    r.uuid = id->uuid;
    r.subvolume = id->subvolume;
    r.type = id->type;
    r.block_size = id->block_size;
    r.mount_point = root < roots_.size() ? roots_[root] : "";
    r.subvolume_uuid = id->subvolume_uuid;
    r.generation = id->generation;
    for (auto& d : id->devices)
      if (std::find(devices_.begin(), devices_.end(), d) == devices_.end()) devices_.push_back(d);
    changes = Pending(r, path);
    if (id->read_only && !said_read_only_) {
      said_read_only_ = true;
      observer_->Notice(path + " is a read-only btrfs snapshot: its files are read and may be the sources "
                        "of shared data, but are never changed (later ones are not named; --exclude leaves them "
                        "out, --exclude-preset nas those in .snapshots and #snapshot)");
    }
  } else {
    // Unidentified: an entry of its own, never paired with anything else.
    r.uuid = "unknown-dev-" + std::to_string(dev);
  }
  own.reset();
  list_.push_back(r);
  keys_.push_back(r.Key());
  changes_.push_back(std::move(changes));
  return of_dev_[dev] = uint32_t(list_.size() - 1);
}

bool Filesystems::UnchangedExtents(uint32_t i, uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  Changes& c = changes_[i];
  if (c.pending) Search(list_[i], &c);
  return c.known && !std::binary_search(c.inodes.begin(), c.inodes.end(), ino);
}

Filesystems::Changes Filesystems::Pending(const FsRecord& r, const std::string& path) {
  Changes c;
  const PreviousIndex::Subvolume* before = prev_.SubvolumeOf(r.Key());
  if (!use_generations_ || !before || r.generation == 0) return c;
  // Another subvolume under the same id, or a filesystem restored from an older copy.
  if (before->uuid != r.subvolume_uuid || before->generation > r.generation) {
    observer_->Notice("btrfs subvolume " + std::to_string(r.subvolume) + " at " + path +
                      " is not the one the previous index saw (uuid or generation differs); mapping every file");
    return c;
  }
  c.pending = true;
  c.since = before->generation;
  c.path = path;
  return c;
}

void Filesystems::Search(const FsRecord& r, Changes* c) {
  c->pending = false;
  auto fd = Own(sys_, sys_.OpenNoFollow(c->path));
  Status s = fd.ok() ? Status::Ok() : fd.status();
  if (s.ok()) {
    const std::vector<uint64_t> bounds = prev_.InodeSlices(r.Key(), search_threads_, kBtrfsFirstInode, kBtrfsLastInode);
    const size_t n = bounds.size() - 1;
    std::vector<std::vector<uint64_t>> found(n);
    std::vector<Status> status(n);
    auto one = [&](size_t k) {
      status[k] = sys_.ChangedInodes(fd->get(), c->since, bounds[k], bounds[k + 1] - 1, &found[k]);
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < n; ++k) threads.emplace_back(one, k);
    one(0);
    for (auto& t : threads) t.join();
    fd->reset();
    for (size_t k = 0; k < n && s.ok(); ++k) {
      s = status[k];
      c->inodes.insert(c->inodes.end(), found[k].begin(), found[k].end());
    }
  }
  if (!s.ok()) {
    observer_->Notice("btrfs subvolume " + std::to_string(r.subvolume) + ": cannot list the files changed since " +
                      "the previous index (" + s.message() + "); mapping every file" +
                      (s.errnum() == EPERM ? " (this needs root)" : ""));
    std::vector<uint64_t>().swap(c->inodes);
    return;
  }
  c->known = true;
}

}  // namespace oans
