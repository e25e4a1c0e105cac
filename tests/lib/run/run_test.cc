// lib/run: the state directory's trust rules, its lock, the stored roots and options,
// generations and their retention.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "lib/run/generations.h"
#include "lib/run/run_config.h"
#include "lib/run/run_lock.h"
#include "lib/run/spawn.h"
#include "lib/run/state_dir.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

TEST(StateDirName, StableOrderFreeAndReadable) {
  std::string a = StateDirName({"/srv/data", "/home"});
  EXPECT_EQ(a, StateDirName({"/home", "/srv/data", "/home"}));
  EXPECT_NE(a, StateDirName({"/srv/data"}));
  EXPECT_EQ(a.rfind("home+srv_data-", 0), 0u) << a;
  EXPECT_EQ(StateDirName({"/"}).rfind("root-", 0), 0u);
  std::string odd = StateDirName({"/x/../a b\nc"});
  EXPECT_EQ(odd.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+"),
            std::string::npos)
      << odd;
}

// oans run's roots as oans-scan takes them: canonical, each once; a symlink root is
// refused naming its target, a symlink above a root resolved.
TEST(CanonicalRoots, SymlinkRootRefused) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.Join("data").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir.Join("data/sub").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("data", dir.Join("link").c_str()), 0);
  auto r = CanonicalRoots({dir.Join("link")});
  EXPECT_TRUE(test::StatusIs(r.status(), Status::Code::kInvalidArgument,
                             dir.Join("link") + " is a symlink to " + dir.Join("data") + "; give the target itself"));
  r = CanonicalRoots({dir.Join("link/sub"), dir.Join("data/sub/")});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, std::vector<std::string>{dir.Join("data/sub")});
}

TEST(OpenStateDir, CreatesPrivateDirectory) {
  TempDir t;
  auto fd = OpenStateDir(t.Join("base/state"), /*create=*/true);
  ASSERT_OK(fd.status());
  struct stat st;
  ASSERT_EQ(::fstat(*fd, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(::stat(t.Join("base").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ::close(*fd);
  EXPECT_FALSE(OpenStateDir(t.Join("base/missing"), /*create=*/false).ok());
}

TEST(OpenStateDir, RefusesWritableByOthers) {
  TempDir t;
  ASSERT_EQ(::mkdir(t.Join("state").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(t.Join("state").c_str(), 0770), 0);
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("writable by other users (mode 0770)"), std::string::npos)
      << fd.status().message();
}

TEST(OpenStateDir, RefusesParentWritableByOthersWithoutStickyBit) {
  TempDir t;
  ASSERT_EQ(::mkdir(t.Join("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(t.Join("open").c_str(), 0777), 0);
  auto refused = OpenStateDir(t.Join("open/state"), true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("writable by other users without the sticky bit"), std::string::npos)
      << refused.status().message();
  ASSERT_EQ(::chmod(t.Join("open").c_str(), 01777), 0);
  auto fd = OpenStateDir(t.Join("open/state"), true);
  ASSERT_OK(fd.status());
  ::close(*fd);
}

TEST(OpenStateDir, RefusesSymlink) {
  TempDir t;
  ASSERT_EQ(::mkdir(t.Join("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(t.Join("real").c_str(), t.Join("link").c_str()), 0);
  auto fd = OpenStateDir(t.Join("link"), true);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("symlink"), std::string::npos) << fd.status().message();
  // A symlink in the parent is refused too.
  ASSERT_EQ(::symlink(t.path().c_str(), t.Join("up").c_str()), 0);
  EXPECT_FALSE(OpenStateDir(t.Join("up/real"), true).ok());
}

TEST(OpenStateDir, RefusesTmpfs) {
  struct statfs s;
  if (::statfs("/dev/shm", &s) != 0 || s.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  char tmpl[] = "/dev/shm/oans-state-test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string base = tmpl;
  auto fd = OpenStateDir(base + "/state", true);
  test::RemoveTree(base);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("is on tmpfs"), std::string::npos) << fd.status().message();
}

TEST(CheckNotOnRoots, RefusesTheRootsFilesystem) {
  TempDir t;
  test::MakeDir(t.Join("data"));
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_OK(fd.status());
  Status s = CheckNotOnRoots(*fd, t.Join("state"), {t.Join("data")});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("which is being deduped"), std::string::npos) << s.message();
  struct stat a, b;
  ASSERT_EQ(::stat("/proc", &a), 0);
  ASSERT_EQ(::stat(t.path().c_str(), &b), 0);
  if (a.st_dev != b.st_dev) EXPECT_OK(CheckNotOnRoots(*fd, t.Join("state"), {"/proc"}));
  ::close(*fd);
}

TEST(RunLock, SecondHolderIsRefusedAndNamesTheFirst) {
  TempDir t;
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_OK(fd.status());
  {
    auto first = RunLock::Take(*fd, t.Join("state"));
    ASSERT_OK(first.status());
    auto second = RunLock::Take(*fd, t.Join("state"));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), Status::Code::kBusy);  // exit 4, not an error
    EXPECT_NE(second.status().message().find("another oans run (pid " + std::to_string(::getpid()) + ")"),
              std::string::npos)
        << second.status().message();
  }
  EXPECT_OK(RunLock::Take(*fd, t.Join("state")).status());  // released with the first
  ::close(*fd);
}

TEST(RunLock, RefusesASymlinkAsLock) {
  TempDir t;
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_OK(fd.status());
  test::WriteFile(t.Join("victim"), "keep me");
  ASSERT_EQ(::symlink(t.Join("victim").c_str(), t.Join("state/lock").c_str()), 0);
  EXPECT_FALSE(RunLock::Take(*fd, t.Join("state")).ok());
  EXPECT_EQ(test::ReadFile(t.Join("victim")), "keep me");
  ::close(*fd);
}

TEST(RunConfig, RoundTripsAnyPath) {
  RunConfig c;
  c.roots = {"/srv/da\nta", "/srv/back\\slash", "/srv/ x"};
  c.scan_args = {"--exclude", "*.tmp"};
  c.plan_args = {"--whole-files-only"};
  c.apply_args = {"--max-rate", "200M", ""};
  c.keep = 5;
  std::string text = EncodeRunConfig(c);
  EXPECT_NE(text.find("root /srv/da\\nta\n"), std::string::npos) << text;
  auto back = ParseRunConfig(text, "run.conf");
  ASSERT_OK(back.status());
  EXPECT_EQ(*back, c);
}

// Per-run options are never written; those an older version stored (plan-only, --until
// and --deadline among the apply arguments) are read, left out and said.
TEST(RunConfig, PerRunOptionsOfOlderVersionsAreReadAndLeftOut) {
  const std::string old =
      "oans-run 1\nkeep 3\nplan-only 1\nroot /a\napply --until\napply 13:32\napply --max-rate\napply 5\n"
      "apply --deadline=3600s\nplan-only 0\n";
  auto c = ParseRunConfig(old, "/s/run.conf");
  ASSERT_OK(c.status());
  EXPECT_EQ(c->apply_args, (std::vector<std::string>{"--max-rate", "5"}));
  ASSERT_EQ(c->ignored.size(), 3u);
  EXPECT_NE(c->ignored[0].find("plan-only 1: ignored"), std::string::npos) << c->ignored[0];
  EXPECT_NE(c->ignored[1].find("apply --until 13:32: ignored"), std::string::npos) << c->ignored[1];
  EXPECT_NE(c->ignored[2].find("apply --deadline=3600s: ignored"), std::string::npos) << c->ignored[2];
  const std::string text = EncodeRunConfig(*c);
  EXPECT_EQ(text, "oans-run 1\nkeep 3\nroot /a\napply --max-rate\napply 5\n");
  EXPECT_TRUE(ParseRunConfig(text, "/s/run.conf")->ignored.empty());
}

TEST(RunConfig, ShownReadably) {
  RunConfig c;
  c.roots = {"/srv/data", "/srv/it's"};
  c.scan_args = {"--exclude", "*.tmp"};
  c.apply_args = {"--max-rate", "1000", "--link", "hard"};
  c.keep = 4;
  c.ignored = {"plan-only 1: ignored"};
  EXPECT_EQ(FormatRunConfig(c, "/var/lib/oans/x"),
            "state directory  /var/lib/oans/x\n"
            "root             /srv/data\n"
            "root             '/srv/it'\\''s'\n"
            "keep             4\n"
            "oans-scan        --exclude '*.tmp'\n"
            "oans-plan        (nothing)\n"
            "oans-apply       --max-rate 1000 --link hard\n"
            "ignored          plan-only 1: ignored\n");
}

TEST(RunConfig, HardlinksAskedByTheLastLinkOption) {
  EXPECT_FALSE(AppliesHardlinks({}));
  EXPECT_TRUE(AppliesHardlinks({"--link", "hard"}));
  EXPECT_TRUE(AppliesHardlinks({"--max-rate", "1", "--link=hard"}));
  EXPECT_FALSE(AppliesHardlinks({"--link=hard", "--link", "reflink"}));
  EXPECT_FALSE(AppliesHardlinks({"--", "--link=hard"}));
  EXPECT_TRUE(IsPerRunApplyOption("--until"));
  EXPECT_TRUE(IsPerRunApplyOption("--deadline=2h"));
  EXPECT_FALSE(IsPerRunApplyOption("--untilx"));
  EXPECT_FALSE(IsPerRunApplyOption("--max-rate"));
}

TEST(RunConfig, WholeFilesOnlyWhenHardlinksOrWholeFilePlans) {
  RunConfig c;
  EXPECT_FALSE(SharesWholeFilesOnly(c));
  c.apply_args = {"--link=hard"};
  EXPECT_TRUE(SharesWholeFilesOnly(c));
  c.apply_args = {"--link", "reflink"};
  c.plan_args = {"--min-size", "1M", "--whole-files-only"};
  EXPECT_TRUE(SharesWholeFilesOnly(c));
  c.plan_args = {"--", "--whole-files-only"};
  EXPECT_FALSE(SharesWholeFilesOnly(c));
}

TEST(RunConfig, BadFilesNameFileAndLine) {
  const std::string head = "oans-run 1\n";
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"", "is empty"},
           {"oans-run 2\nroot /a\n", "line 1: not an oans run configuration"},
           {head + "root /a", "truncated"},
           {head + "root relative\n", "line 2: a root must be an absolute path"},
           {head + "keep 0\nroot /a\n", "line 2: keep must be"},
           {head + "root /a\nexec rm\n", "line 3: unknown key"},
           {head + "root /a\\x\n", "line 2: unknown escape"},
           {head + "keep 3\n", "names no root"}}) {
    auto r = ParseRunConfig(text, "/s/run.conf");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("/s/run.conf"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  }
}

TEST(RunConfig, SavedAndLoadedWithoutFollowingSymlinks) {
  TempDir t;
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_OK(fd.status());
  auto none = LoadRunConfig(*fd, t.Join("state"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("give ROOT... the first time"), std::string::npos);
  RunConfig c;
  c.roots = {"/srv/data"};
  ASSERT_OK(SaveRunConfig(*fd, t.Join("state"), c));
  auto back = LoadRunConfig(*fd, t.Join("state"));
  ASSERT_OK(back.status());
  EXPECT_EQ(*back, c);
  EXPECT_EQ(test::ListDir(t.Join("state")), std::vector<std::string>{"run.conf"});
  // A symlink planted as the configuration is not read.
  ASSERT_EQ(::unlink(t.Join("state/run.conf").c_str()), 0);
  test::WriteFile(t.Join("other.conf"), EncodeRunConfig(c));
  ASSERT_EQ(::symlink(t.Join("other.conf").c_str(), t.Join("state/run.conf").c_str()), 0);
  EXPECT_FALSE(LoadRunConfig(*fd, t.Join("state")).ok());
  ::close(*fd);
}

TEST(Generations, ListedNewestIndexAndRetention) {
  TempDir t;
  auto fd = OpenStateDir(t.Join("state"), true);
  ASSERT_OK(fd.status());
  for (uint64_t n : {1, 2, 3, 4}) {
    test::WriteFile(t.Join("state/" + IndexName(n)), "i");
    test::WriteFile(t.Join("state/" + PlanName(n)), "p");
  }
  test::WriteFile(t.Join("state/" + JournalName(1)), "j");
  test::WriteFile(t.Join("state/" + IndexName(5)), "interrupted scan, no plan");
  test::WriteFile(t.Join("state/gen-12.idx"), "not a generation's name");
  auto gens = ListGenerations(*fd);
  ASSERT_OK(gens.status());
  ASSERT_EQ(gens->size(), 5u);
  EXPECT_TRUE((*gens)[0].journal);
  EXPECT_FALSE((*gens)[4].plan);
  ASSERT_NE(NewestIndex(*gens), nullptr);
  EXPECT_EQ(NewestIndex(*gens)->number, 5u);

  std::vector<uint64_t> removed;
  ASSERT_OK(RemoveOldGenerations(*fd, 2, &removed));
  EXPECT_EQ(removed, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(test::ListDir(t.Join("state")),
            (std::vector<std::string>{"gen-000003.idx", "gen-000004.idx", "gen-000005.idx", "gen-12.idx",
                                      "plan-000003.capnp", "plan-000004.capnp"}));
  removed.clear();
  ASSERT_OK(RemoveOldGenerations(*fd, 3, &removed));  // only two complete: nothing goes
  EXPECT_TRUE(removed.empty());
  ::close(*fd);
}

// A step's standard output goes to our standard error: oans run --json stays one line.
TEST(RunChild, ChildStdoutGoesToOurStderr) {
  TempDir dir;
  const std::string out = dir.Join("out"), err = dir.Join("err");
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(STDOUT_FILENO), saved_err = ::dup(STDERR_FILENO);
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(o, 0);
  ASSERT_GE(e, 0);
  ::dup2(o, STDOUT_FILENO);
  ::dup2(e, STDERR_FILENO);
  auto rc = RunChild({"/bin/sh", "-c", "echo summary"}, nullptr, true);
  ::dup2(saved_out, STDOUT_FILENO);
  ::dup2(saved_err, STDERR_FILENO);
  for (int fd : {o, e, saved_out, saved_err}) ::close(fd);
  ASSERT_TRUE(rc.ok()) << rc.status().message();
  EXPECT_EQ(*rc, 0);
  EXPECT_EQ(test::ReadFile(out), "");
  EXPECT_EQ(test::ReadFile(err), "summary\n");
}

}  // namespace
}  // namespace oans
