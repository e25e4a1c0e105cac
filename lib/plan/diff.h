// Differences between two generations of an index.
// Files added, removed, changed (same inode, new size/mtime/ctime) or renamed.
// Renamed: same inode, new path.
// Files match by (filesystem UUID + subvolume, inode), as --previous does.
// Never by device number (identity.h).
// Both indexes become streams sorted by that key.
// External sorters hold them within `memory`, past it in files in `temp_dir`.
// One merge join walks them: differences come out by filesystem and inode.
// Single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "lib/format/index_file.h"

namespace oans {

enum class DiffKind { kAdded, kRemoved, kChanged, kRenamed };

struct DiffEntry {
  DiffKind kind;
  std::string path;      // the new path (old path for removed)
  std::string old_path;  // renamed: the previous path
  uint64_t size = 0, old_size = 0;
};

struct DiffStats {
  uint64_t added = 0, removed = 0, changed = 0, renamed = 0, unchanged = 0;
};

// Calls `on_entry` for every difference; renamed-and-changed files are reported as both.
Status DiffIndexes(const std::string& old_path, const std::string& new_path,
                   const std::function<void(const DiffEntry&)>& on_entry, DiffStats* stats,
                   uint64_t memory = 256ull << 20, const std::string& temp_dir = "");

const char* DiffKindName(DiffKind k);

}  // namespace oans
