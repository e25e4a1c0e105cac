// Who can reach a path: hardlink mode links two names only when the same users can
// reach both, so that no one gains read or write access to a file she had none to.
// A user reaches a path when she may search every directory above it. Each directory that
// not everyone may search is a constraint: its owner, group, search bits and ACL. Two paths
// with the same set of constraints are reached by the same users, whatever users and groups
// exist. Different sets may still be reached by the same users, but that cannot be decided
// from the tree alone: such names are not linked.
// Single-threaded (the hardlink executor's).
#pragma once

#include <map>
#include <string>

#include "lib/base/sys.h"

namespace oans {

class Reach {
 public:
  explicit Reach(Sys& sys) : sys_(sys) {}
  // The constraints on reaching `path` (absolute), in a canonical form: equal strings,
  // the same users. Directories are opened without following symlinks.
  Result<std::string> Of(const std::string& path);
  // Forgets what it learned of directories (their modes may change between rounds).
  void Clear() { dirs_.clear(); }

 private:
  Result<std::string> Constraint(const std::string& dir);
  Sys& sys_;
  std::map<std::string, std::string> dirs_;  // directory -> its constraint, "" for none
};

}  // namespace oans
