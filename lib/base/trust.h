// Whether a file oans reads as instructions (a dedupe plan, an apply journal) can have been
// written by someone other than the user running oans, as ssh's StrictModes asks of a key.
// A file is trusted when it is owned by root or the effective user, is writable by no group
// or other, and every directory from / down to it is owned by root or the effective user
// and is group/other writable only with the sticky bit (as /tmp): otherwise another user
// could have written the file, or could replace it under its name.
//
// Every check is made on descriptors: the file's real path is read back from the open
// descriptor, each directory of it is opened without following symlinks and checked, and
// the last one must still hold the same inode under the file's name.
#pragma once

#include <sys/types.h>

#include <string>

#include "lib/base/status.h"

namespace oans {

// `what` names the file in messages ("plan", "journal"). kInvalid with the file or
// directory, the reason and how to fix it, when it is not to be trusted.
Status CheckTrustedFile(int fd, const std::string& what, const std::string& name);

// The same for a directory (where a journal is created): the directory and its ancestors.
Status CheckTrustedDirectory(int dirfd, const std::string& what, const std::string& name);

// The owner/mode rule alone, for one file or directory's stat: "" when trusted, else why
// not ("owned by uid 65534", "writable by other users (mode 0666)").
std::string UntrustedReason(uid_t owner, mode_t mode, bool directory, uid_t euid);

}  // namespace oans
