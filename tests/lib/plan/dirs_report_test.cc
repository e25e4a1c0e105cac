// lib/plan/dirs_report: reclaimable bytes added up the directory tree.
#include "lib/plan/dirs_report.h"

#include <gtest/gtest.h>

namespace oans {
namespace {

GroupReport Group(uint64_t size, std::string source, std::vector<std::string> dests, std::vector<bool> shared) {
  GroupReport g;
  g.size = size;
  g.source = std::move(source);
  g.dests = std::move(dests);
  g.dest_shared = std::move(shared);
  return g;
}

TEST(DirsReport, AddsDestinationsNotYetSharedUpTheTree) {
  std::vector<GroupReport> groups = {
      Group(1000, "/srv/a/x", {"/srv/b/x", "/srv/b/deep/x", "/srv/a/y"}, {false, false, true}),
      Group(50, "/srv/a/s", {"/srv/c/s"}, {false}),
  };
  auto dirs = DirsReport(groups, 0);
  std::vector<std::tuple<std::string, uint64_t, uint64_t>> got;
  for (const auto& d : dirs) got.emplace_back(d.dir, d.reclaimable_bytes, d.duplicate_files);
  std::vector<std::tuple<std::string, uint64_t, uint64_t>> want = {
      {"/srv", 2050, 3}, {"/srv/b", 2000, 2}, {"/srv/b/deep", 1000, 1}, {"/srv/c", 50, 1}};
  // /srv/a holds only sources and a shared copy: nothing to reclaim; "/" is above /srv,
  // which holds every duplicate.
  EXPECT_EQ(got, want);
  auto top2 = DirsReport(groups, 2);
  ASSERT_EQ(top2.size(), 2u);
  EXPECT_EQ(top2[1].dir, "/srv/b");
}

TEST(DirsReport, TextEscapesNamesAndJsonKeepsBytes) {
  std::vector<GroupReport> groups = {Group(4096, "/d/src", {"/d/new\nline\\dir/f", "/d/\xff/g"}, {false, false})};
  auto dirs = DirsReport(groups, 0);
  std::string text = DirsText(dirs);
  EXPECT_NE(text.find("/d/new\\nline\\\\dir\n"), std::string::npos) << text;
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, dirs.size());  // one line per directory, whatever the names
  std::string json = DirsJson(dirs);
  EXPECT_NE(json.find("{\"path\":\"/d\",\"reclaimable_bytes\":8192,\"duplicate_files\":2}"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"path_hex\":\"2f642fff\""), std::string::npos) << json;
  EXPECT_TRUE(DirsText(DirsReport({}, 5)).empty());
  // A short name beside a long common directory is kept.
  auto beside = DirsReport({Group(10, "/s", {"/x/a-long-name/f", "/x/a-long-name/g", "/x/b/f"}, {false, false, false})}, 0);
  ASSERT_EQ(beside.size(), 3u);
  EXPECT_EQ(beside[0].dir, "/x");
  EXPECT_EQ(beside[2].dir, "/x/b");
  // Files directly under "/" count in "/".
  auto rooted = DirsReport({Group(10, "/a", {"/b"}, {false})}, 0);
  ASSERT_EQ(rooted.size(), 1u);
  EXPECT_EQ(rooted[0].dir, "/");
}

}  // namespace
}  // namespace oans
