// The JSON that oans writes (oans-cat, --json summaries, progress lines, dry runs), built
// as nlohmann::ordered_json values and written one object per line.
//
// Paths and other names are bytes, not necessarily UTF-8. nlohmann refuses invalid UTF-8,
// so every such string goes in through JsonText, which replaces invalid sequences with
// U+FFFD, and AddPath also records the exact bytes in hex when that happened, so nothing
// is lost. JsonLine never throws: a string that reached a value unconverted is replaced
// the same way there.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace oans {

// Objects keep their keys in the order they were added, so lines read as they are built.
using Json = nlohmann::ordered_json;

bool IsValidUtf8(const std::string& s);
// s with every byte that does not begin a valid UTF-8 sequence replaced by U+FFFD.
std::string ToValidUtf8(const std::string& s);
std::string Hex(const std::string& bytes);

// A JSON string of bytes that may not be UTF-8 (see ToValidUtf8).
Json JsonText(const std::string& bytes);
// An array of JsonText.
Json JsonTextArray(const std::vector<std::string>& items);
// obj[key] = JsonText(path), and obj[key + "_hex"] = Hex(path) when the path is not
// valid UTF-8.
void AddPath(Json& obj, const std::string& key, const std::string& path);

// One line of compact JSON, without the newline. Control characters and DEL in strings
// are escaped (\n, \r, \t, \" and \\ by name, others as \u00XX), so a line never holds a
// raw control character or newline.
std::string JsonLine(const Json& value);
// JsonLine(value) and a newline to f.
void PrintJsonLine(std::FILE* f, const Json& value);
// A quoted, escaped JSON string: JsonLine(JsonText(s)).
std::string JsonString(const std::string& s);

}  // namespace oans
