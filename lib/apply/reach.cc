#include "lib/apply/reach.h"

#include <sys/stat.h>

#include <set>

#include "lib/base/fd.h"

namespace oans {

constexpr char kAclAccess[] = "system.posix_acl_access";

// A directory's constraint: "" when everyone may search it (and no ACL says otherwise).
Result<std::string> Reach::Constraint(const std::string& dir) {
  auto it = dirs_.find(dir);
  if (it != dirs_.end()) return it->second;
  OANS_ASSIGN_OR_RETURN(Fd fd, Own(sys_, sys_.OpenDirNoFollow(dir)));
  auto st = sys_.Fstat(fd.get());
  auto xattrs = sys_.Xattrs(fd.get());
  fd.reset();
  if (!st.ok()) return st.status();
  if (!xattrs.ok()) return xattrs.status();
  std::string acl;
  for (const auto& [name, value] : *xattrs)
    if (name == kAclAccess) acl = value;
  const uint32_t search = st->mode & 0111;
  std::string c;
  if (search != 0111 || !acl.empty())
    c = std::to_string(st->uid) + ":" + std::to_string(st->gid) + ":" + std::to_string(search) + ":" + acl;
  dirs_.emplace(dir, c);
  return c;
}

Result<std::string> Reach::Of(const std::string& path) {
  if (path.empty() || path[0] != '/') return Status::Invalid(path + ": not an absolute path");
  std::set<std::string> constraints;
  for (size_t slash = 0; slash != std::string::npos; slash = path.find('/', slash + 1)) {
    OANS_ASSIGN_OR_RETURN(auto c, Constraint(slash == 0 ? "/" : path.substr(0, slash)));
    if (!c.empty()) constraints.insert(std::move(c));
  }
  std::string out;
  for (const auto& c : constraints) out.append(c).append(1, '\0');
  return out;
}

}  // namespace oans
