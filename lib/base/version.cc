#include "lib/base/version.h"

namespace oans {
std::string ToolVersion() { return OANS_VERSION; }
}  // namespace oans
