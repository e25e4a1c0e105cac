// How apply names a failed system call in its summary, and which failures may go away
// on their own: a round with such a failure is not journaled as done, so the next run of
// the plan tries it again.
#pragma once

#include <string>

namespace oans {

// "EPERM (not permitted: ...)" for the errno values apply meets, else "errno N (text)".
std::string ReasonFor(int errnum);

// True for failures that a later run may not meet (busy, out of space or memory, too
// many open files, an I/O error); false for what stays true of the file (permissions,
// another filesystem, unsupported, vanished, differs).
bool Transient(int errnum);

}  // namespace oans
