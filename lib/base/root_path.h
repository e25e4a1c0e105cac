// A root as a user names it (oans-scan ROOT, oans run ROOT) made canonical: absolute,
// without symlinks, ".", ".." or repeated slashes (realpath), so that the paths below
// it are recorded as apply opens them, never following a symlink. A root that is
// itself a symlink is refused, naming its target: the tree scanned and recorded would
// be another than the one named. A symlink in a directory above the root is resolved
// (/var/run/x is scanned as /run/x): the root is the directory itself, whatever path
// led to it.
#pragma once

#include <string>

#include "lib/base/status.h"

namespace oans {

Result<std::string> CanonicalRoot(const std::string& root);

}  // namespace oans
