#include "lib/scan/walk.h"

#include "lib/base/fd.h"
#include "lib/base/tsan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <climits>
#include <deque>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace oans {
namespace {

// An open directory shared by the tasks of its subdirectories until they have opened.
using DirHandle = Fd;

struct Local {
  std::deque<WalkEntry> files;  // grows without moving what it holds
  std::vector<WalkProblem> problems;
  uint64_t dirs = 0, special = 0, symlinks = 0, mounts = 0, small = 0, excluded = 0, in_disk_order = 0;
  std::vector<uint64_t> hits;  // per exclude glob
};

class Walker {
 public:
  // One directory to walk, made by the task that found it.
  struct Job {
    std::shared_ptr<DirHandle> parent;
    std::string name, path;
    uint64_t mnt_id, dev;
    uint32_t root;
  };

  // Runs `job` as a task. The task carries only the job's address: libtbb builds and
  // hands over the task object where ThreadSanitizer cannot see it, so the job itself is
  // handed over with an annotation (lib/base/tsan.h).
  void Spawn(Job* job) {
    OANS_TSAN_RELEASE(job);
    tasks_.run([this, job] {
      OANS_TSAN_ACQUIRE(job);
      std::unique_ptr<Job> own(job);
      Dir(std::move(own->parent), std::move(own->name), std::move(own->path), own->mnt_id, own->dev, own->root);
    });
  }

  Walker(Sys& sys, const WalkOptions& o) : sys_(sys), o_(o) {}

  // A task of the parallel walk: opens the directory through its parent and lists it.
  void Dir(std::shared_ptr<DirHandle> parent, std::string name, std::string path, uint64_t mnt_id,
           uint64_t dev, uint32_t root) {
    struct Ended {  // task_group::wait returns after this task: see Run
      const char* p;
      ~Ended() { OANS_TSAN_RELEASE(p); }
    } ended{&tasks_done_};
    Local& L = local_.local();
    if (Stopped()) return;
    auto fd = sys_.OpenAt(parent ? parent->get() : AT_FDCWD, parent ? name : path, true);
    parent.reset();
    if (!fd.ok()) {
      L.problems.push_back({path, fd.status()});
      return;
    }
    List(std::make_shared<DirHandle>(sys_, *fd), {std::move(path), mnt_id, dev, root}, L);
  }

  // A directory the inode-order walk found, by device and inode; `unverified` when it
  // was queued by its entry's inode, not yet stat'ed (Verify).
  struct Queued {
    uint64_t dev, ino, mnt_id;
    uint32_t root;
    std::string path;
    bool unverified = false;
    uint64_t parent_dev = 0, parent_ino = 0;  // of the directory that listed it, when unverified
    bool operator<(const Queued& o) const { return std::tie(dev, ino, path) < std::tie(o.dev, o.ino, o.path); }
  };

  // The inode-order walk (WalkOptions::inode_order): one walker takes the directory of the
  // next inode up from the last one listed (the lowest once none is above: an elevator),
  // opens it by its path, no symlink followed, and lists it if it is still the directory
  // its parent listed. Taking the lowest instead would go back down for every child found
  // below its parent: on XFS, which puts each new directory in the next allocation group,
  // that is a seek across the disk per directory.
  void InOrder() {
    std::pair<uint64_t, uint64_t> at{0, 0};  // (dev, inode) of the directory listed last
    while (!queue_.empty() && !Stopped()) {
      auto it = queue_.lower_bound(Queued{at.first, at.second, 0, 0, {}});
      if (it == queue_.end()) it = queue_.begin();
      Queued q = std::move(queue_.extract(it).value());
      at = {q.dev, q.ino};
      Local& L = local_.local();
      auto fd = q.unverified ? OpenUnverified(q) : sys_.OpenDirNoFollow(q.path);
      if (fd.ok() && *fd < 0) {  // a mount point
        L.mounts++;
        continue;
      }
      if (!fd.ok()) {
        L.problems.push_back({q.path, fd.status()});
        continue;
      }
      auto handle = std::make_shared<DirHandle>(sys_, *fd);
      auto st = sys_.Fstat(handle->get());
      if (st.ok() && (st->dev != q.dev || st->ino != q.ino || (q.mnt_id && st->mnt_id && st->mnt_id != q.mnt_id)))
        st = Replaced(q.path);
      if (!st.ok()) {
        L.problems.push_back({q.path, st.status()});
        continue;
      }
      if (o_.dirs_in_disk_order && TypeOf(q.dev, handle->get()) == "xfs") {
        auto read = sys_.ReadDirectoryInDiskOrder(handle->get());
        if (!read.ok() && !read.status().IsUnsupported()) {  // not at its start: not listed
          L.problems.push_back({q.path, read.status()});
          continue;
        }
        if (read.ok() && *read) L.in_disk_order++;
      }
      Listing l{std::move(q.path), q.mnt_id, q.dev, q.root};
      l.ino = q.ino;
      l.defer_dirs = DefersDirs(q.dev, handle->get());
      List(std::move(handle), l, L);
    }
  }

  static Status Replaced(const std::string& path) {
    return Status::Io("directory " + path + " was replaced while the walk ran; the next scan walks it", ESTALE);
  }

  // Opens a directory queued unverified: stat'ed first through its parent, as Entry stats
  // the others (last component not followed, no automount), the parent opened by its path
  // with no symlink followed and only if it is still the directory that listed it; then
  // opened from the parent if it is still the directory listed, or a mount point there
  // the walk may cross. -1: a mount point, not crossed.
  Result<int> OpenUnverified(Queued& q) {
    const size_t slash = q.path.rfind('/');
    if (slash == std::string::npos) return Replaced(q.path);
    const std::string parent = slash == 0 ? "/" : q.path.substr(0, slash), name = q.path.substr(slash + 1);
    OANS_ASSIGN_OR_RETURN(Fd pfd, Own(sys_, sys_.OpenDirNoFollow(parent)));
    OANS_ASSIGN_OR_RETURN(FileStat ps, sys_.Fstat(pfd.get()));
    if (ps.dev != q.parent_dev || ps.ino != q.parent_ino) return Replaced(parent);
    OANS_ASSIGN_OR_RETURN(FileStat st, sys_.StatAt(pfd.get(), name));
    if (!S_ISDIR(st.mode)) return Replaced(q.path);
    if (q.mnt_id && st.mnt_id && st.mnt_id != q.mnt_id) {
      if (o_.one_filesystem) return -1;
      q.mnt_id = st.mnt_id;
    } else if (st.dev != q.dev || st.ino != q.ino) {
      return Replaced(q.path);
    }
    q.dev = st.dev;
    q.ino = st.ino;
    return sys_.OpenAt(pfd.get(), name, true);
  }

  // Whether subdirectories on device `dev` are queued unverified (Listing::defer_dirs).
  bool DefersDirs(uint64_t dev, int fd) { return TypeOf(dev, fd) == "ext4" || TypeOf(dev, fd) == "xfs"; }

  // The type of filesystem `dev` ("" when it cannot be told), asked once through `fd`.
  const std::string& TypeOf(uint64_t dev, int fd) {
    auto [it, added] = types_.try_emplace(dev);
    if (added) {
      auto fs = sys_.Identify(fd);
      if (fs.ok()) it->second = fs->type;
    }
    return it->second;
  }

  bool Stopped() const { return o_.stop && o_.stop->load(std::memory_order_relaxed); }

  // An open directory being listed.
  struct Listing {
    std::string path;
    uint64_t mnt_id, dev;
    uint32_t root;
    // Subdirectories queued by their entries' inodes, stat'ed later (Verify): on ext4 and
    // XFS only, where an entry's inode is the directory's own (on XFS the directory's
    // inode lies in another allocation group than its parent's entries, so a stat now
    // would seek there and back).
    bool defer_dirs = false;
    uint64_t ino = 0;  // the directory's inode (in inode order)
  };

  // Reads the directory's entries, batch by batch: regular files kept or visited,
  // subdirectories handed to Found.
  void List(std::shared_ptr<DirHandle> handle, const Listing& d, Local& L) {
    L.dirs++;
    if (o_.on_dir) o_.on_dir(handle->get(), d.path, d.root);
    const std::string prefix = d.path == "/" ? "/" : d.path + "/";
    std::vector<DirEntry> batch;
    size_t next = 0;
    for (;;) {
      if (next == batch.size()) {
        auto more = sys_.ReadDir(handle->get(), &batch);
        next = 0;
        if (!more.ok())
          L.problems.push_back({d.path, Status::Io("reading directory " + d.path, more.status().errnum())});
        if (!more.ok() || !*more) break;
        if (o_.on_batch) o_.on_batch(handle->get(), d.dev, d.path, d.root, batch);
        if (o_.inode_order)
          std::sort(batch.begin(), batch.end(), [](const DirEntry& a, const DirEntry& b) { return a.ino < b.ino; });
        continue;
      }
      Entry(handle, d, prefix, batch[next++], L);
    }
  }

  // One entry of a directory being listed.
  void Entry(const std::shared_ptr<DirHandle>& handle, const Listing& d, const std::string& prefix,
             const DirEntry& de, Local& L) {
    const std::string& child = de.name;
    if (child == "." || child == "..") return;
    std::string child_path = prefix + child;
    if (Excluded(child_path, child, d.root, L)) return;
    // A visitor may finish a regular file without opening it (one stat by name).
    if (o_.without_open && de.type == DT_REG) {
      WalkEntry e{child_path, {}, d.root};
      e.st.dev = d.dev;
      if (o_.without_open(handle->get(), child, de.ino, &e)) {
        if (o_.files_found) o_.files_found->fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    // Regular files (by d_type) are opened at once when a visitor wants them: one
    // lookup, and the stat comes from the open descriptor.
    if (o_.on_file && de.type == DT_REG && VisitFile(handle->get(), child, child_path, d.root, L)) return;
    // In inode order, a subdirectory (by d_type) is stat'ed when the walk comes to it
    // (Verify), where an entry's inode is the directory's own (Listing::defer_dirs).
    if (d.defer_dirs && de.type == DT_DIR && child_path.size() < PATH_MAX - 1) {
      queue_.insert({d.dev, de.ino, d.mnt_id, d.root, std::move(child_path), true, d.dev, d.ino});
      return;
    }
    auto st = sys_.StatAt(handle->get(), child);
    if (!st.ok()) {
      if (st.status().errnum() != ENOENT) L.problems.push_back({child_path, st.status()});
      return;  // vanished since readdir: nothing to record
    }
    const uint32_t mode = st->mode;
    if (S_ISDIR(mode)) {
      if (o_.one_filesystem && d.mnt_id && st->mnt_id && st->mnt_id != d.mnt_id) {
        L.mounts++;
        return;
      }
      Found(handle, child, std::move(child_path), d.mnt_id, *st, d.root);
    } else if (S_ISREG(mode)) {
      if (st->size == 0 || st->size < o_.min_size) {
        L.small++;
        return;
      }
      if (o_.on_file && VisitFile(handle->get(), child, child_path, d.root, L)) return;
      L.files.push_back({std::move(child_path), *st, d.root});
      if (o_.files_found) o_.files_found->fetch_add(1, std::memory_order_relaxed);
    } else if (S_ISLNK(mode)) {
      L.symlinks++;
    } else {
      L.special++;
    }
  }

  // A directory to walk: queued in inode order, or a task of its own. The task owns its
  // job, which holds the parent handle until the child directory is open; only the job's
  // address travels in the task (see Spawn).
  void Found(const std::shared_ptr<DirHandle>& parent, const std::string& name, std::string path, uint64_t mnt_id,
             const FileStat& st, uint32_t root) {
    if (o_.inode_order)  // with its own mount (a mount point crossed)
      queue_.insert({st.dev, st.ino, st.mnt_id ? st.mnt_id : mnt_id, root, std::move(path)});
    else
      Spawn(new Job{parent, name, std::move(path), mnt_id, st.dev, root});
  }

  // Whether an exclude glob matches the entry; counted for the glob when one does.
  bool Excluded(const std::string& path, const std::string& name, uint32_t root, Local& L) {
    const int by = o_.excludes.empty() ? -1 : ExcludedBy(excludes_[root], path, name);
    if (by < 0) return false;
    L.excluded++;
    L.hits.resize(o_.excludes.size());
    L.hits[size_t(by)]++;
    return true;
  }

  // Opens a regular file relative to its directory and hands it to on_file. Returns
  // false when the entry is not a regular file after all (the caller classifies it).
  bool VisitFile(int dirfd, const std::string& name, std::string& path, uint32_t root, Local& L) {
    auto fd = Own(sys_, sys_.OpenAt(dirfd, name, false));
    if (!fd.ok()) {
      int e = fd.status().errnum();
      if (e == ELOOP) return false;  // a symlink now: classified by the caller
      if (e != ENOENT) L.problems.push_back({path, fd.status()});
      return true;
    }
    auto st = sys_.Fstat(fd->get());
    if (!st.ok() || !S_ISREG(st->mode)) {
      if (!st.ok()) L.problems.push_back({path, st.status()});
      return st.ok() ? false : true;
    }
    if (st->size == 0 || st->size < o_.min_size) {
      L.small++;
      return true;
    }
    WalkEntry e{std::move(path), *st, root};
    const bool done = o_.on_file(fd->get(), &e);
    fd->reset();
    if (!done) L.files.push_back(std::move(e));
    if (o_.files_found) o_.files_found->fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  Result<WalkResult> Run(const std::vector<std::string>& roots) {
    WalkResult out;
    for (const auto& r : roots) excludes_.push_back(ExcludesForRoot(o_.excludes, r));
    tbb::task_arena arena(std::max(1, o_.threads));
    arena.execute([&] {
      for (uint32_t i = 0; i < roots.size(); ++i) {
        const std::string root = roots[i];
        auto st = sys_.StatAt(AT_FDCWD, root);
        if (!st.ok()) {
          local_.local().problems.push_back({root, st.status()});
          continue;
        }
        if (S_ISREG(st->mode)) {
          if (st->size > 0 && st->size >= o_.min_size) local_.local().files.push_back({root, *st, i});
          continue;
        }
        if (!S_ISDIR(st->mode)) {
          local_.local().problems.push_back({root, Status::Invalid(root + " is not a directory or regular file")});
          continue;
        }
        Found(nullptr, root, root, st->mnt_id, *st, i);
      }
      tasks_.wait();
    });
    InOrder();
    OANS_TSAN_ACQUIRE(&tasks_done_);
    size_t total = 0;
    for (auto& L : local_) total += L.files.size();
    out.files.reserve(total);
    for (auto& L : local_) {
      for (auto& f : L.files) out.files.push_back(std::move(f));
      L.files.clear();
      for (auto& p : L.problems) out.problems.push_back(std::move(p));
      out.dirs += L.dirs;
      out.skipped_special += L.special;
      out.skipped_symlinks += L.symlinks;
      out.skipped_mounts += L.mounts;
      out.dirs_in_disk_order += L.in_disk_order;
      out.skipped_small += L.small;
      out.excluded += L.excluded;
      out.exclude_hits.resize(o_.excludes.size());
      for (size_t i = 0; i < L.hits.size(); ++i) out.exclude_hits[i] += L.hits[i];
    }
    return out;
  }

 private:
  Sys& sys_;
  const WalkOptions& o_;
  std::vector<std::vector<std::string>> excludes_;  // o_.excludes as matched below each root
  tbb::task_group tasks_;
  char tasks_done_ = 0;  // every task releases it as it ends (ThreadSanitizer, lib/base/tsan.h)
  tbb::enumerable_thread_specific<Local> local_;
  std::set<Queued> queue_;  // the inode-order walk's directories found and not yet listed
  std::map<uint64_t, std::string> types_;  // TypeOf, by device (the inode-order walker only)
};

}  // namespace

Result<WalkResult> Walk(Sys& sys, const std::vector<std::string>& roots, const WalkOptions& options) {
  Walker w(sys, options);
  auto r = w.Run(roots);
  if (r.ok() && r->files.empty() && r->dirs == 0 && !r->problems.empty() && roots.size() == r->problems.size())
    return r->problems.front().status;
  return r;
}

}  // namespace oans
