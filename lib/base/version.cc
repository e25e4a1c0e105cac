#include "lib/base/version.h"

#include "lib/format/index_file.h"
#include "lib/format/plan_file.h"

namespace oans {
std::string ToolVersion() { return OANS_VERSION; }
std::string ToolVersionString(const std::string& tool) {
  return tool + " (oans) " + OANS_VERSION + ", index format " + std::to_string(kIndexFormatVersion) +
         ", plan format " + std::to_string(kPlanFormatVersion);
}
}  // namespace oans
