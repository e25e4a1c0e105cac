// The source stage's choice (lib/plan/source.h): a member of the largest set already
// sharing one extent layout; among equals, the one earliest on disk, then the first.
#include "lib/plan/source.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

Detail At(uint64_t physical) {
  Detail d;
  d.size = 8192;
  d.extents = {{0, physical, 8192, kExtentLast}};
  d.first_physical = physical;
  return d;
}

uint32_t Choose(const std::vector<Detail>& files) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < files.size(); ++i) ids.push_back(i);
  return ChooseSource(ids, [&](uint32_t id) -> const Detail& { return files[id]; });
}

TEST(Source, EarliestOnDiskWhenNothingIsShared) {
  EXPECT_EQ(Choose({At(900), At(300), At(600)}), 1u);
}

TEST(Source, TheLargestSharingSetWins) {
  // 2 and 3 share one layout, late on disk; 0 and 1 are alone and earlier.
  EXPECT_EQ(Choose({At(100), At(200), At(800), At(800)}), 2u);
  // Two sets of two: the one earlier on disk.
  EXPECT_EQ(Choose({At(800), At(500), At(800), At(500)}), 1u);
}

TEST(Source, TheFileWithMostNamesWins) {
  // Hardlink mode never links a destination with other names: that file is the source,
  // the earliest on disk of those with most names.
  std::vector<Detail> files{At(100), At(800), At(200), At(900)};
  files[1].nlink = files[3].nlink = 2;
  files[0].nlink = files[2].nlink = 1;
  EXPECT_EQ(Choose(files), 1u);
  files[3].nlink = 3;
  EXPECT_EQ(Choose(files), 3u);
}

TEST(Source, UnusableLayoutsShareNothing) {
  Detail a = At(0), b = At(0), c = At(700);
  a.extents[0].flags |= kExtentDelalloc;  // not placed yet: no address to trust
  b.extents[0].flags |= kExtentDelalloc;
  a.first_physical = b.first_physical = UINT64_MAX;
  EXPECT_EQ(Choose({a, b, c}), 2u);
}

TEST(Source, TiesGoToTheFirstLoaded) { EXPECT_EQ(Choose({At(400), At(400), At(400)}), 0u); }

}  // namespace
}  // namespace oans
