// Which oans file a file is, told by the magic in its first message: both formats begin
// with a header frame, and only the header's magic says whether it is an extent index or
// a dedupe plan. Reads that one frame and nothing more.
#pragma once

#include <string>

#include "lib/base/status.h"

namespace oans {

enum class FileKind { kIndex, kPlan };

// kCorrupt naming the file ("... is not an oans index or plan") when it is empty, not
// zstd, its first message is not a header, or the magic is neither format's; an open or
// read failure as it came.
Result<FileKind> DetectFileKind(const std::string& path);

}  // namespace oans
