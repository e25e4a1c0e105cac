// What a followed scan keeps of a changed directory (lib/scan/follow_state.h).
#include "lib/scan/follow_state.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

// Sorted by name, and of a name met twice the later entry: the one the directory holds
// now (the name was unlinked and made again while its items were read).
TEST(ChangedDir, EntriesSortedAndALaterNameWins) {
  ChangedDir d;
  d.SetEntries({{"b", 300}, {"a", 301}, {"c", 302}, {"a", 310}, {"d", 303}, {"a", 320}, {"c", 330}});
  const std::vector<std::pair<std::string, uint64_t>> want = {{"a", 320}, {"b", 300}, {"c", 330}, {"d", 303}};
  EXPECT_EQ(d.entries, want);
  EXPECT_EQ(d.Find("a"), 320u);
  EXPECT_EQ(d.Find("d"), 303u);
  EXPECT_EQ(d.Find("e"), 0u);
  EXPECT_EQ(d.Find(""), 0u);
  d.SetEntries({});
  EXPECT_TRUE(d.entries.empty());
  EXPECT_EQ(d.Find("a"), 0u);
}

}  // namespace
}  // namespace oans
