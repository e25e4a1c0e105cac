#include "lib/base/json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace oans {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Json, StringEscapesQuotesBackslashAndControls) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonString("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(JsonString("l1\nl2"), "\"l1\\nl2\"");
  EXPECT_EQ(JsonString("\r\t"), "\"\\r\\t\"");
  EXPECT_EQ(JsonString("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonString(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(JsonString("/"), "\"/\"");
}

TEST(Json, StringKeepsValidUtf8) {
  const std::string s = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80";
  EXPECT_EQ(JsonString(s), "\"" + s + "\"");
}

TEST(Json, StringReplacesInvalidUtf8) {
  EXPECT_EQ(JsonString("a\xFF" "b"), "\"a" + kReplacement + "b\"");
  // A truncated 3-byte sequence at the end: each stray byte is replaced.
  EXPECT_EQ(JsonString("x\xE2\x82"), "\"x" + kReplacement + kReplacement + "\"");
  // Overlong encoding of '/' must not come out as '/'.
  EXPECT_EQ(JsonString("\xC0\xAF"), "\"" + kReplacement + kReplacement + "\"");
  // A lone surrogate.
  std::string out = JsonString("\xED\xA0\x80");
  EXPECT_EQ(out.find("\xED\xA0\x80"), std::string::npos);
  EXPECT_TRUE(IsValidUtf8(out));
  // An invalid lead byte followed by a quote: the quote is still escaped.
  EXPECT_EQ(JsonString("\xFE\""), "\"" + kReplacement + "\\\"\"");
}

// One object with AddPath(key, path), as a line.
std::string PathLine(const std::string& key, const std::string& path) {
  Json j = Json::object();
  AddPath(j, key, path);
  return JsonLine(j);
}

TEST(Json, PathAddsHexOnlyForInvalidUtf8) {
  EXPECT_EQ(PathLine("path", "/a/b"), "{\"path\":\"/a/b\"}");
  EXPECT_EQ(PathLine("path", "/a/\xC3\xA9"), "{\"path\":\"/a/\xC3\xA9\"}");
  EXPECT_EQ(PathLine("path", "/a\xFF"), "{\"path\":\"/a" + kReplacement + "\",\"path_hex\":\"2f61ff\"}");
  EXPECT_EQ(PathLine("p", "\n\xFE"), "{\"p\":\"\\n" + kReplacement + "\",\"p_hex\":\"0afe\"}");
}

TEST(Json, Hex) {
  EXPECT_EQ(Hex(""), "");
  EXPECT_EQ(Hex(std::string("\x00\x01\xAB\xFF", 4)), "0001abff");
}

TEST(Json, IsValidUtf8EdgeCases) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("ascii only"));
  EXPECT_TRUE(IsValidUtf8(std::string("\0", 1)));
  EXPECT_TRUE(IsValidUtf8("\xC2\x80"));          // U+0080, smallest 2-byte
  EXPECT_TRUE(IsValidUtf8("\xDF\xBF"));          // U+07FF
  EXPECT_TRUE(IsValidUtf8("\xE0\xA0\x80"));      // U+0800, smallest 3-byte
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF, just below the surrogates
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000, just above them
  EXPECT_TRUE(IsValidUtf8("\xEF\xBF\xBF"));      // U+FFFF
  EXPECT_TRUE(IsValidUtf8("\xF0\x90\x80\x80"));  // U+10000, smallest 4-byte
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF, the last code point

  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xC2"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xC2" "A"));          // bad continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xC1\xBF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xE0\x9F\xBF"));      // overlong U+07FF
  EXPECT_FALSE(IsValidUtf8("\xF0\x80\x80\xAF"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xF0\x8F\xBF\xBF"));  // overlong U+FFFF
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800 surrogate
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // U+DFFF surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF8\x88\x80\x80\x80"));  // 5-byte form
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("ok\xC3"));            // valid prefix, truncated tail
}

TEST(Json, StringEscapesBackspaceFormFeedAndDelAsBefore) {
  // nlohmann's own forms would be \b, \f and a raw DEL.
  EXPECT_EQ(JsonString("\b\f\x7f"), "\"\\u0008\\u000c\\u007f\"");
  // An escaped backslash followed by b or f is left alone.
  EXPECT_EQ(JsonString("\\b\\f"), "\"\\\\b\\\\f\"");
  EXPECT_EQ(JsonString("\\\b"), "\"\\\\\\u0008\"");
}

TEST(Json, ToValidUtf8) {
  EXPECT_EQ(ToValidUtf8(""), "");
  EXPECT_EQ(ToValidUtf8("h\xC3\xA9"), "h\xC3\xA9");
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a" + kReplacement + "b");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), kReplacement + kReplacement);
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\xED\xA0\x80\xF4\x90\x80\x80")));
}

TEST(Json, ObjectsKeepKeyOrderAndTypes) {
  Json j = Json::object();
  j["type"] = "file";
  j["zero"] = 0;
  j["big"] = UINT64_MAX;
  j["negative"] = int64_t(-5);
  j["yes"] = true;
  j["no"] = false;
  j["list"] = Json::array({1, 2});
  j["nested"] = Json::array({Json::array({1, 2, 3, 4})});
  j["empty"] = Json::array();
  j["obj"] = Json::object();
  EXPECT_EQ(JsonLine(j),
            "{\"type\":\"file\",\"zero\":0,\"big\":18446744073709551615,\"negative\":-5,\"yes\":true,\"no\":false,"
            "\"list\":[1,2],\"nested\":[[1,2,3,4]],\"empty\":[],\"obj\":{}}");
}

TEST(Json, TextArrayReplacesInvalidUtf8) {
  EXPECT_EQ(JsonLine(JsonTextArray({})), "[]");
  EXPECT_EQ(JsonLine(JsonTextArray({"/a", "/b\xFF", "x\"y"})), "[\"/a\",\"/b" + kReplacement + "\",\"x\\\"y\"]");
}

TEST(Json, LineNeverThrowsOnInvalidUtf8) {
  // A string that reached a value without JsonText: nlohmann's default would throw.
  Json j = Json::object();
  j["raw"] = std::string("a\xFF" "b");
  j[std::string("key\xFE")] = 1;
  std::string line;
  EXPECT_NO_THROW(line = JsonLine(j));
  EXPECT_TRUE(IsValidUtf8(line));
  EXPECT_EQ(line, "{\"raw\":\"a" + kReplacement + "b\",\"key" + kReplacement + "\":1}");
}

// Parses a line written by JsonLine and gives back the exact bytes of `key`.
std::string ExactPath(const std::string& line, const std::string& key) {
  Json j = Json::parse(line);
  if (!j.contains(key + "_hex")) return j[key].get<std::string>();
  std::string hex = j[key + "_hex"].get<std::string>(), bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

TEST(Json, HostileNamesStayOnOneLineAndRoundTripExactly) {
  const std::vector<std::string> names = {
      "/plain",
      "/new\nline",
      "/cr\r\"quote\"\\back",
      "/esc\x1b[31mred\x1b[0m",
      std::string("/nul\0byte", 9),
      "/bell\x07\b\f\x7f",
      "/bad\xFF\xFE",
      "/trunc\xE2\x82",
      "/overlong\xC0\xAF..",
      "/h\xC3\xA9\xE2\x9C\x93",
      "/mixed\n\xFF\t",
  };
  for (const auto& name : names) {
    Json j = Json::object();
    j["type"] = "file";
    AddPath(j, "path", name);
    const std::string line = JsonLine(j);
    EXPECT_TRUE(IsValidUtf8(line)) << line;
    for (unsigned char c : line) EXPECT_FALSE(c < 0x20 || c == 0x7f) << "raw control byte in " << line;
    EXPECT_EQ(ExactPath(line, "path"), name) << line;
    EXPECT_EQ(j.contains("path_hex"), !IsValidUtf8(name)) << line;
  }
}

TEST(Json, PrintJsonLineWritesOneLine) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ASSERT_NE(f, nullptr);
  Json j = Json::object();
  AddPath(j, "path", "a\nb");
  PrintJsonLine(f, j);
  PrintJsonLine(f, Json::array({1}));
  std::fclose(f);
  EXPECT_EQ(std::string(buf, len), "{\"path\":\"a\\nb\"}\n[1]\n");
  std::free(buf);
}

}  // namespace
}  // namespace oans
