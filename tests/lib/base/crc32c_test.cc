// crc32c (lib/base/crc32c.h).
#include "lib/base/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace oans {
namespace {

TEST(Crc32c, GivesTheCheckValue) {
  EXPECT_EQ(Crc32c(0, "123456789", 9), 0xe3069283u);  // the CRC-32C check value
  // Continued in pieces as in one go.
  EXPECT_EQ(Crc32c(Crc32c(0, "12345", 5), "6789", 4), 0xe3069283u);
}

TEST(Crc32c, LongBuffersAtAnyAlignment) {
  std::string data(16384 + 7, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 131 + 7);
  // Byte by byte as in one call.
  for (size_t skew : {0, 1, 3, 7}) {
    uint32_t bytewise = 0;
    for (size_t i = skew; i < data.size(); ++i) bytewise = Crc32c(bytewise, data.data() + i, 1);
    EXPECT_EQ(Crc32c(0, data.data() + skew, data.size() - skew), bytewise) << skew;
  }
}

}  // namespace
}  // namespace oans
