#include "lib/base/json.h"

#include <gtest/gtest.h>

#include <string>

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

TEST(Json, PathAddsHexOnlyForInvalidUtf8) {
  EXPECT_EQ(JsonPath("path", "/a/b"), "\"path\":\"/a/b\"");
  EXPECT_EQ(JsonPath("path", "/a/\xC3\xA9"), "\"path\":\"/a/\xC3\xA9\"");
  EXPECT_EQ(JsonPath("path", "/a\xFF"), "\"path\":\"/a" + kReplacement + "\",\"path_hex\":\"2f61ff\"");
  EXPECT_EQ(JsonPath("p", "\n\xFE"), "\"p\":\"\\n" + kReplacement + "\",\"p_hex\":\"0afe\"");
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

}  // namespace
}  // namespace oans
