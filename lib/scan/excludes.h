// Exclude globs (--exclude, --exclude-preset): how they are made absolute for each root
// and matched against an entry's path or name.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// Whether the entry `name` at `path` is excluded by globs made absolute for its root.
bool PathExcluded(const std::vector<std::string>& excludes, const std::string& path, const std::string& name);
// The index of the first glob that excludes the entry, or -1.
int ExcludedBy(const std::vector<std::string>& excludes, const std::string& path, const std::string& name);

// The globs as matched below `root`: one with a '/' that starts with neither '/' nor '*'
// ("photos/@eaDir") is relative to the root ("/srv/data/photos/@eaDir"); the others stay.
std::vector<std::string> ExcludesForRoot(const std::vector<std::string>& excludes, const std::string& root);

// The globs of --exclude-preset NAME ("nas": the metadata, recycle bins and snapshot
// directories of NAS systems and desktops); an error naming the presets for another.
Result<std::vector<std::string>> ExcludePreset(const std::string& name);

}  // namespace oans
