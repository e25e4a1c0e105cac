// The oans version, as written into every index and plan header.
#pragma once
#include <string>
namespace oans {
std::string ToolVersion();
}
namespace oans {
// "oans-scan (oans) 0.1.0, index format 1, plan format 1" for --version.
std::string ToolVersionString(const std::string& tool);
}  // namespace oans
