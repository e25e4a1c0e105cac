// The subvolumes linked below a btrfs subvolume, and below those, as the root tree's
// ROOT_REF items say: where each is linked, not what it holds. A scan that follows
// changes (lib/scan/follow.h) follows each of them as a root of its own. Any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans {

struct NestedSubvolume {
  uint64_t id = 0;
  std::string rel;  // its path within the subvolume searched from, without a leading slash
};

// The subvolumes below subvolume `id` of fd's filesystem, at any depth, in the order
// found (a parent before its children); those `wanted` refuses (by path) are left out
// with all below them. Needs CAP_SYS_ADMIN. *searches counts the tree searches and
// lookups made.
Status SubvolumesBelow(Sys& sys, int fd, uint64_t id, const std::function<bool(const std::string&)>& wanted,
                       std::vector<NestedSubvolume>* out, uint64_t* searches);

}  // namespace oans
