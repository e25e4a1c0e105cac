// Minimal JSON output helpers for machine-readable output (oans-cat, --json, progress).
// Paths are bytes, not necessarily UTF-8: JsonString replaces invalid sequences with
// U+FFFD, and JsonPath adds the exact bytes in hex when that happened, so nothing is lost.
#pragma once

#include <string>

namespace oans {

bool IsValidUtf8(const std::string& s);
// A quoted, escaped JSON string.
std::string JsonString(const std::string& s);
// `"key":"path"`, plus `,"key_hex":"..."` when the path is not valid UTF-8.
std::string JsonPath(const std::string& key, const std::string& path);
std::string Hex(const std::string& bytes);

}  // namespace oans
