#include "lib/base/paths.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

TEST(PathsTest, WithinARoot) {
  EXPECT_TRUE(PathWithin("/srv", "/srv"));
  EXPECT_TRUE(PathWithin("/srv/a", "/srv"));
  EXPECT_TRUE(PathWithin("/srv/a/b.c", "/srv"));
  EXPECT_TRUE(PathWithin("/srv/..a/.b", "/srv"));  // names that start with dots are names
  EXPECT_TRUE(PathWithin("/etc/passwd", "/"));
}

TEST(PathsTest, NotWithin) {
  EXPECT_FALSE(PathWithin("/srvx/a", "/srv"));
  EXPECT_FALSE(PathWithin("/sr", "/srv"));
  EXPECT_FALSE(PathWithin("/srv/", "/srv"));
  EXPECT_FALSE(PathWithin("srv/a", "/"));
  EXPECT_FALSE(PathWithin("/srv/a", "srv"));
  EXPECT_FALSE(PathWithin("/srv/a", ""));
}

TEST(PathsTest, DotComponentsNeverPass) {
  // A hostile record's path that only seems to lie below the root.
  for (const char* p : {"/srv/..", "/srv/../etc/shadow", "/srv/a/../../etc", "/srv/./a", "/srv/a/.", "/srv//a",
                        "/srv/a/"})
    EXPECT_FALSE(PathWithin(p, "/srv")) << p;
  EXPECT_FALSE(PathWithin("/../etc", "/"));
  EXPECT_FALSE(PathWithin("//etc", "/"));
}

TEST(PathsTest, CleanAbsolutePaths) {
  for (const char* p : {"/", "/a", "/a/b.c", "/..a/.b", "/a/with\nnewline"}) EXPECT_TRUE(CleanAbsolutePath(p)) << p;
  for (const char* p : {"", "a", "a/b", "./a", "/a/", "//a", "/a//b", "/.", "/./a", "/a/..", "/../a"})
    EXPECT_FALSE(CleanAbsolutePath(p)) << p;
  EXPECT_FALSE(CleanAbsolutePath(std::string_view("/a\0b", 4)));
}

}  // namespace
}  // namespace oans
