// The oans version, as written into every index and plan header.
#pragma once
#include <string>
namespace oans {
std::string ToolVersion();
}  // namespace oans
