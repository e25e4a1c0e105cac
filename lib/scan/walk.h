// Parallel directory walk. Each directory is a TBB task that reads its entries through
// its parent's open descriptor (openat with O_NOFOLLOW), so symlinks are never followed,
// a directory swapped for a symlink is refused, and paths longer than PATH_MAX work. The
// walk stays on the mount of each root. It only collects: regular files with their stat,
// and problems (permission denied, vanished) as data.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"
#include "lib/scan/excludes.h"

namespace oans {

struct WalkEntry;

struct WalkOptions {
  // Globs: with a '/', matched against the whole path, relative to each root unless it
  // starts with '/' or '*' (ExcludesForRoot); without, against the name.
  std::vector<std::string> excludes;
  uint64_t min_size = 0;  // regular files smaller than this are skipped (0 = keep all)
  bool one_filesystem = true;
  int threads = 4;
  std::atomic<uint64_t>* files_found = nullptr;  // progress counter, may be null
  // When set, every regular file kept is opened relative to its directory (no second
  // path lookup) and this is called with the descriptor, from a walker thread; the stat
  // in `entry` then comes from that descriptor. Returning true means the visitor is done
  // with the file and the walk does not keep it in WalkResult::files.
  std::function<bool(int fd, WalkEntry* entry)> on_file;
  // When set, called first for each entry readdir calls a regular file, with its
  // directory, name and inode number, before anything else touches it; returning true
  // means the visitor finished the file itself (entry.path and root are set for it, and
  // entry.st.dev is the directory's device: a hint, only the file's own stat says).
  std::function<bool(int dirfd, const std::string& name, uint64_t ino, WalkEntry* entry)> without_open;
  // When set, called with each batch of entries readdir returns, before any of them is
  // handed to without_open or opened, from the walker thread that then goes through the
  // batch; with the directory's descriptor, device, path and root.
  std::function<void(int dirfd, uint64_t dev, const std::string& path, uint32_t root,
                     const std::vector<DirEntry>& batch)>
      on_batch;
  // When set, called from a walker thread for each directory once it is open, with
  // its descriptor (valid only during the call), path and root.
  std::function<void(int fd, const std::string& path, uint32_t root)> on_dir;
  const std::atomic<bool>* stop = nullptr;  // when set, no further directory is read
  // For a spinning disk: one walker (`threads` unused) lists the directories by inode as
  // an elevator does (the next inode found up from the last one listed, the lowest once
  // none is above), each found one opened by its path (no symlink followed) and listed only
  // if it is still the inode its parent listed, and goes through each readdir batch in
  // ascending inode order, so the disk reads inode tables and directory blocks mostly in
  // one direction instead of in name-hash order.
  bool inode_order = false;
  // With inode_order: each directory's blocks are read in disk order before it is listed
  // (FileSys::ReadDirectoryInDiskOrder: XFS, whose growing directories often lie
  // downwards), and its leaf block with them. Where the filesystem cannot, it is listed as
  // it is.
  bool dirs_in_disk_order = false;
};

struct WalkEntry {
  std::string path;
  FileStat st;
  uint32_t root = 0;  // index of the root it was found under
  uint64_t first_physical = UINT64_MAX;  // may be set by WalkOptions::on_file, for disk order
};

struct WalkProblem {
  std::string path;
  Status status;
};

struct WalkResult {
  std::vector<WalkEntry> files;
  std::vector<WalkProblem> problems;
  uint64_t dirs = 0;
  uint64_t skipped_special = 0;   // fifos, sockets, devices
  uint64_t skipped_symlinks = 0;
  uint64_t skipped_mounts = 0;    // directories on another mount
  uint64_t dirs_in_disk_order = 0;  // directories whose blocks were read in disk order first
  uint64_t skipped_small = 0;     // below min_size (empty files included)
  uint64_t excluded = 0;
  std::vector<uint64_t> exclude_hits;  // entries excluded by each glob of WalkOptions::excludes
};

// Walks the roots; a root that cannot be opened is a problem, not a failure, unless
// every root fails.
Result<WalkResult> Walk(Sys& sys, const std::vector<std::string>& roots, const WalkOptions& options);

}  // namespace oans
