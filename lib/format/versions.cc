#include "lib/format/versions.h"

#include "lib/base/version.h"

namespace oans {

std::string ToolVersionString(const std::string& tool) {
  return tool + " (oans) " + ToolVersion() + ", index format " + std::to_string(kIndexFormatVersion) +
         ", plan format " + std::to_string(kPlanFormatVersion);
}

}  // namespace oans
