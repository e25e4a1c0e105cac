// Differences between two generations of an index: which files were added, removed,
// changed (same inode, new size/mtime/ctime) or renamed (same inode, new path). Files are
// matched by (filesystem UUID + subvolume, inode), as --previous does.
#pragma once

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
                   const std::function<void(const DiffEntry&)>& on_entry, DiffStats* stats);

const char* DiffKindName(DiffKind k);

}  // namespace oans
