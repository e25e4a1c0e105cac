// The magics and format versions of oans files, and the version line the tools print.
// Small on purpose: a reader of a version needs no codec.
#pragma once

#include <cstdint>
#include <string>

namespace oans {

// 2: sector sums and key kinds (FileEntry::sum_kind, sector_sums, key_kind); a version 1
// reader would pair keys made from btrfs checksums with keys of data.
inline constexpr uint32_t kIndexFormatVersion = 2;
inline constexpr char kIndexMagic[] = "oans-index";

// 2: an operation may rewrite, naming the source range itself as a destination (its
// bytes copied into a new extent, which every destination then shares). A plan without
// such operations is written as version 1, which older readers accept.
inline constexpr uint32_t kPlanFormatVersion = 2;
inline constexpr uint32_t kPlanFormatNoRewrite = 1;
inline constexpr char kPlanMagic[] = "oans-plan";

// "oans-scan (oans) 0.1.0, index format 2, plan format 2" for --version.
std::string ToolVersionString(const std::string& tool);

}  // namespace oans
