// The state directory of `oans run`: one per set of roots, holding its generations
// (lib/run/generations.h), its lock (lib/run/run_lock.h) and the stored roots and
// options (lib/run/run_config.h). It is trusted input, so it must be ours alone: a
// directory owned by the effective user, writable by no one else, in a parent no one
// else can rename it out of, reached without following symlinks. It must not be on a
// filesystem being deduped (its files would be scanned and deduped under the run) nor
// on tmpfs or ramfs (the previous generation would vanish at every reboot).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

inline constexpr const char* kDefaultStateBase = "/var/lib/oans";

// A stable name for a set of roots: a readable form of the sorted roots (at most 48
// characters of [A-Za-z0-9._-]) and 16 hex digits of their hash, e.g.
// "srv_data-3f09c2a1d4e5b6c7". Order and duplicates do not matter.
std::string StateDirName(const std::vector<std::string>& roots);

// The roots made absolute and canonical (lib/base/root_path.h: symlinks above a root
// resolved once, now, by the user who gives them; a root that is itself a symlink
// refused, as oans-scan refuses it), sorted and without duplicates. A root that does not
// exist is an error naming it.
Result<std::vector<std::string>> CanonicalRoots(const std::vector<std::string>& roots);

// Opens the state directory at `path` (absolute), creating it 0700 (and its parent, 0700,
// when missing) if `create`. Refuses a directory that is not owned by the effective user,
// that others can write, whose parent others can write without the sticky bit, or that is
// on tmpfs or ramfs (a directory it made for nothing is removed again). Returns the
// descriptor (O_DIRECTORY, close-on-exec); `created` (may be null) says whether it made it.
Result<int> OpenStateDir(const std::string& path, bool create, bool* created = nullptr);

// Refuses a state directory on the filesystem of any root (same device, or same
// filesystem UUID: btrfs subvolumes have device numbers of their own).
Status CheckNotOnRoots(int dirfd, const std::string& path, const std::vector<std::string>& roots);

// The state directories under `base` that hold stored roots (a run.conf), sorted; none
// when `base` does not exist.
std::vector<std::string> StoredStateDirs(const std::string& base);

}  // namespace oans
