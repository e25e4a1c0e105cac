#include "lib/scan/path_map.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

TEST(PathMapTest, EmptyMapsEveryPathToItself) {
  PathMap m;
  EXPECT_EQ(m.Map("/srv/a/b"), "/srv/a/b");
}

TEST(PathMapTest, RenamedDirectoryMovesEverythingBelowIt) {
  PathMap m;
  m.Rename("/srv/a", "/srv/x/y");
  EXPECT_EQ(m.Map("/srv/a"), "/srv/x/y");
  EXPECT_EQ(m.Map("/srv/a/b/c"), "/srv/x/y/b/c");
  EXPECT_EQ(m.Map("/srv/ab/c"), "/srv/ab/c");  // a whole component only
  EXPECT_EQ(m.Map("/srv/b"), "/srv/b");
}

TEST(PathMapTest, RemovedDirectoryDropsEverythingBelowIt) {
  PathMap m;
  m.Remove("/srv/a");
  EXPECT_EQ(m.Map("/srv/a/f"), std::nullopt);
  EXPECT_EQ(m.Map("/srv/a"), std::nullopt);
  EXPECT_EQ(m.Map("/srv/af"), "/srv/af");
}

TEST(PathMapTest, LongestPrefixDecides) {
  // /srv/a was removed after /srv/a/keep was moved out of it to /srv/kept.
  PathMap m;
  m.Remove("/srv/a");
  m.Rename("/srv/a/keep", "/srv/kept");
  EXPECT_EQ(m.Map("/srv/a/keep/f"), "/srv/kept/f");
  EXPECT_EQ(m.Map("/srv/a/other/f"), std::nullopt);
}

TEST(PathMapTest, MovesSaysWhetherMapRewrites) {
  PathMap m;
  EXPECT_FALSE(m.Moves("/srv/a/f"));
  m.Rename("/srv/a", "/srv/b");
  m.Remove("/srv/c");
  for (const char* p : {"/srv/a/f", "/srv/a", "/srv/c/d/f", "/srv/af", "/srv/b/f", "/srv", "/srv/cc/f"})
    EXPECT_EQ(m.Moves(p), m.Map(p) != std::optional<std::string>(p)) << p;
  EXPECT_TRUE(m.Moves("/srv/a/f"));
  EXPECT_FALSE(m.Moves("/srv/af"));
}

TEST(PathMapTest, PathHelpers) {
  EXPECT_EQ(PathJoin("/", "a"), "/a");
  EXPECT_EQ(PathJoin("/srv", "a"), "/srv/a");
  EXPECT_EQ(PathDirname("/a"), "/");
  EXPECT_EQ(PathDirname("/srv/a/b"), "/srv/a");
  EXPECT_EQ(PathBasename("/srv/a/b"), "b");
}

}  // namespace
}  // namespace oans
