// lib/run/run.h: RunGeneration with stand-in tools (shell scripts that log their
// arguments but --summary-file, write their -o file and a summary, and exit with a chosen
// code): generation numbers, --previous, stored and replayed options, retention, exit
// codes, refusals, the record of each run (lib/run/record.h).
#include "lib/run/run.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>
#include <thread>
#include <sstream>

#include "lib/run/record.h"
#include "lib/run/run_lock.h"
#include "lib/run/state_dir.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

class RunGenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat a, b;
    // The roots must be on another filesystem than the state directory.
    if (::stat("/proc", &a) != 0 || ::stat(t_.path().c_str(), &b) != 0 || a.st_dev == b.st_dev)
      GTEST_SKIP() << "/proc is not another filesystem here";
    test::MakeDir(t_.Join("bin"));
    for (const char* tool : {"oans-scan", "oans-plan", "oans-apply"}) {
      std::string path = t_.Join(std::string("bin/") + tool);
      test::WriteFile(path,
                      "#!/bin/sh\n"
                      "f=" + t_.Join(std::string("rc-") + tool) + "\n"
                      "rc=0; [ -f \"$f\" ] && rc=$(cat \"$f\")\n"
                      "# Like the tools, a failure (2) leaves no output file and no summary.\n"
                      "if [ \"$1\" = --summary-file ]; then\n"
                      "  [ $rc != 2 ] && echo '{\"files\":7,\"hashed\":2,\"planned_bytes\":8192,"
                      "\"bytes_deduped\":4096,\"skipped\":{\"differs\":4096}}' > \"$2\"\n"
                      "  shift 2\n"
                      "fi\n"
                      "echo \"$(basename \"$0\") $*\" >> " + t_.Join("log") + "\n"
                      "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && [ $rc != 2 ] && echo data > \"$2\"; shift; done\n"
                      "exit $rc\n");
      ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
    }
    req_.tool_dir = t_.Join("bin");
    req_.state_base = t_.Join("base");
    req_.roots = {"/proc"};
    req_.config.keep = 2;
    req_.config.apply_args = {"--max-rate", "1000"};
  }
  std::vector<std::string> Log() {
    std::vector<std::string> lines;
    std::istringstream in(test::Exists(t_.Join("log")) ? test::ReadFile(t_.Join("log")) : "");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ::unlink(t_.Join("log").c_str());
    return lines;
  }
  std::string StateDir() { return t_.Join("base/" + StateDirName({"/proc"})); }
  TempDir t_;
  RunRequest req_;
};

TEST_F(RunGenerationTest, GenerationsReplayAndRetention) {
  RunOutcome a = RunGeneration(req_);
  ASSERT_EQ(a.exit_code, 0) << a.message;
  EXPECT_EQ(a.state_dir, StateDir());
  const std::string d = StateDir();
  EXPECT_EQ(Log(), (std::vector<std::string>{"oans-scan -o " + d + "/gen-000001.idx -- /proc",
                                             "oans-plan -o " + d + "/plan-000001.capnp -- " + d + "/gen-000001.idx",
                                             "oans-apply --max-rate 1000 -- " + d + "/plan-000001.capnp"}));
  RunRequest replay;
  replay.tool_dir = req_.tool_dir;
  replay.state_base = req_.state_base;
  replay.per_run_args = {"--quiet"};
  for (int i = 2; i <= 3; ++i) {
    RunOutcome o = RunGeneration(replay);
    ASSERT_EQ(o.exit_code, 0) << o.message;
    EXPECT_EQ(o.generation, uint64_t(i));
    auto log = Log();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0], "oans-scan -o " + d + "/gen-00000" + std::to_string(i) + ".idx --previous " + d +
                          "/gen-00000" + std::to_string(i - 1) + ".idx --quiet -- /proc");
    // The previous generation was applied to the end: only what changed since is planned.
    EXPECT_EQ(log[1], "oans-plan -o " + d + "/plan-00000" + std::to_string(i) + ".capnp --quiet --since " + d +
                          "/gen-00000" + std::to_string(i - 1) + ".idx -- " + d + "/gen-00000" +
                          std::to_string(i) + ".idx");
    EXPECT_EQ(log[2], "oans-apply --quiet --max-rate 1000 -- " + d + "/plan-00000" + std::to_string(i) + ".capnp");
  }
  EXPECT_EQ(test::ListDir(d), (std::vector<std::string>{"applied-000002", "applied-000003", "gen-000002.idx",
                                                        "gen-000003.idx", "lock", "plan-000002.capnp",
                                                        "plan-000003.capnp", "run-000002.json", "run-000003.json",
                                                        "run.conf"}));
}

TEST_F(RunGenerationTest, FailedScanStopsTheRunAndKeepsOldGenerations) {
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  Log();
  test::WriteFile(t_.Join("rc-oans-scan"), "2");
  RunOutcome o = RunGeneration(req_);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.message.find("the scan failed (exit 2)"), std::string::npos) << o.message;
  EXPECT_EQ(Log().size(), 1u);  // no plan, no apply
  EXPECT_TRUE(o.removed.empty());
  EXPECT_TRUE(test::Exists(StateDir() + "/plan-000001.capnp"));
}

TEST_F(RunGenerationTest, ExitCodesCombine) {
  test::WriteFile(t_.Join("rc-oans-scan"), "1");  // files skipped
  EXPECT_EQ(RunGeneration(req_).exit_code, 1);
  ::unlink(t_.Join("rc-oans-scan").c_str());
  test::WriteFile(t_.Join("rc-oans-apply"), "3");  // stopped by its deadline
  RunOutcome o = RunGeneration(req_);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_FALSE(o.applied);
  EXPECT_TRUE(test::Exists(StateDir() + "/applied-000001"));   // applied to the end
  EXPECT_FALSE(test::Exists(StateDir() + "/applied-000002"));  // stopped: the next plan is whole
  test::WriteFile(t_.Join("rc-oans-apply"), "0");
  Log();
  o = RunGeneration(req_);  // the stopped generation was complete: it counts for --keep 2
  auto log = Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1].find("--since"), std::string::npos) << log[1];
  EXPECT_EQ(o.removed, std::vector<uint64_t>{1});
}

TEST_F(RunGenerationTest, PlanOnlyDoesNotApply) {
  req_.plan_only = true;
  RunOutcome o = RunGeneration(req_);
  ASSERT_EQ(o.exit_code, 0) << o.message;
  EXPECT_EQ(Log().size(), 2u);
  EXPECT_NE(o.message.find("oans apply " + StateDir() + "/plan-000001.capnp"), std::string::npos) << o.message;
  // Later, `oans apply` without a plan: the newest plan, the stored options, then these.
  RunRequest later;
  later.tool_dir = req_.tool_dir;
  later.state_base = req_.state_base;
  later.apply_newest = true;
  later.extra_apply_args = {"--until=06:00"};
  RunOutcome a = RunGeneration(later);
  ASSERT_EQ(a.exit_code, 0) << a.message;
  EXPECT_TRUE(a.applied);
  EXPECT_EQ(Log(), std::vector<std::string>{"oans-apply --max-rate 1000 --until=06:00 -- " + StateDir() +
                                            "/plan-000001.capnp"});
  EXPECT_EQ(test::ListDir(StateDir()).size(), 5u);  // nothing new: gen 1, its plan, record, lock, run.conf
  // --plan-only was for that run only: the next run applies.
  RunRequest replay = later;
  replay.apply_newest = false;
  replay.extra_apply_args.clear();
  ASSERT_EQ(RunGeneration(replay).exit_code, 0);
  EXPECT_EQ(Log().size(), 3u);
}

TEST_F(RunGenerationTest, ApplyNewestWithoutAPlanSaysSo) {
  test::WriteFile(t_.Join("rc-oans-plan"), "2");
  EXPECT_EQ(RunGeneration(req_).exit_code, 2);  // an index, no plan
  Log();
  RunRequest later;
  later.tool_dir = req_.tool_dir;
  later.state_base = req_.state_base;
  later.apply_newest = true;
  RunOutcome a = RunGeneration(later);
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.message.find("no plan in " + StateDir() + " yet"), std::string::npos) << a.message;
  EXPECT_TRUE(Log().empty());
}

TEST_F(RunGenerationTest, Refusals) {
  RunRequest replay = req_;
  replay.roots.clear();
  RunOutcome none = RunGeneration(replay);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.message.find("no stored roots under " + req_.state_base), std::string::npos) << none.message;
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  RunRequest other = req_;
  other.state_dir = StateDir();
  other.roots = {"/sys"};
  RunOutcome o = RunGeneration(other);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.message.find("holds the generations of other roots (/proc)"), std::string::npos) << o.message;
  RunRequest missing = req_;
  missing.roots = {t_.Join("no-such-root")};
  EXPECT_NE(RunGeneration(missing).message.find("no-such-root"), std::string::npos);
}

// Options given without roots apply to this run only, after the stored ones (a tool takes
// an option's last value); per-run options given with roots are never stored.
TEST_F(RunGenerationTest, GivenOptionsOverrideForThisRunAndPerRunOnesAreNotStored) {
  req_.extra_apply_args = {"--until", "06:00"};
  req_.plan_only = true;
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  Log();
  const std::string stored = test::ReadFile(StateDir() + "/run.conf");
  EXPECT_EQ(stored, "oans-run 1\nkeep 2\nroot /proc\napply --max-rate\napply 1000\n");
  RunRequest replay;
  replay.tool_dir = req_.tool_dir;
  replay.state_base = req_.state_base;
  replay.config.apply_args = {"--max-rate", "2000"};
  replay.config.scan_args = {"--exclude", "*.iso"};
  replay.config.keep = 1;
  replay.keep_given = true;
  RunOutcome o = RunGeneration(replay);
  ASSERT_EQ(o.exit_code, 0) << o.message;
  const std::string d = StateDir();
  EXPECT_EQ(Log(), (std::vector<std::string>{
                       "oans-scan -o " + d + "/gen-000002.idx --previous " + d + "/gen-000001.idx --exclude *.iso -- /proc",
                       "oans-plan -o " + d + "/plan-000002.capnp -- " + d + "/gen-000002.idx",
                       "oans-apply --max-rate 1000 --max-rate 2000 -- " + d + "/plan-000002.capnp"}));
  EXPECT_EQ(o.removed, std::vector<uint64_t>{1});  // keep 1, for this run
  EXPECT_EQ(test::ReadFile(StateDir() + "/run.conf"), stored);
}

// A run.conf of an older version, with plan-only 1 and a stored --until, is replayed
// without them, and the run says so.
TEST_F(RunGenerationTest, OlderRunConfWithPerRunOptionsIsReplayedWithout) {
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  Log();
  test::WriteFile(StateDir() + "/run.conf",
                  "oans-run 1\nkeep 2\nplan-only 1\nroot /proc\napply --until\napply 13:32\n");
  ASSERT_EQ(::chmod((StateDir() + "/run.conf").c_str(), 0600), 0);
  RunRequest replay;
  replay.tool_dir = req_.tool_dir;
  replay.state_base = req_.state_base;
  std::vector<std::string> notes;
  replay.note = [&](const std::string& n) { notes.push_back(n); };
  RunOutcome o = RunGeneration(replay);
  ASSERT_EQ(o.exit_code, 0) << o.message;
  auto log = Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2], "oans-apply -- " + StateDir() + "/plan-000002.capnp");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find(StateDir() + "/run.conf: plan-only 1: ignored"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("apply --until 13:32: ignored"), std::string::npos) << notes[1];
  auto shown = ShowRunConfig(replay);
  ASSERT_OK(shown.status());
  EXPECT_NE(shown->find("root             /proc\n"), std::string::npos) << *shown;
  EXPECT_NE(shown->find("ignored          plan-only 1: ignored"), std::string::npos) << *shown;
}

// Another run holding the lock: exit 4, nothing run.
TEST_F(RunGenerationTest, BusyLockIsExitFour) {
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  Log();
  auto fd = OpenStateDir(StateDir(), false);
  ASSERT_OK(fd.status());
  {
    auto held = RunLock::Take(*fd, StateDir());
    ASSERT_OK(held.status());
    RunOutcome o = RunGeneration(req_);
    EXPECT_EQ(o.exit_code, 4);
    EXPECT_NE(o.message.find("another oans run (pid "), std::string::npos) << o.message;
    RunRequest later = req_;
    later.roots.clear();
    later.apply_newest = true;
    EXPECT_EQ(RunGeneration(later).exit_code, 4);
    EXPECT_TRUE(Log().empty());
  }
  ::close(*fd);
}

// Roots on a filesystem that cannot share data (tmpfs) are refused before the scan, with
// the fix, and no state directory is left; with --link=hard they are scanned.
TEST_F(RunGenerationTest, RootsThatCannotShareDataAreRefusedFirst) {
  struct statfs s;
  if (::statfs("/dev/shm", &s) != 0 || s.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  char tmpl[] = "/dev/shm/oans-run-test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  req_.roots = {root};
  RunOutcome o = RunGeneration(req_);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.message, root + " is on tmpfs, which cannot share data between files: give --link=hard to replace "
                              "identical files by hardlinks instead");
  EXPECT_TRUE(Log().empty());
  EXPECT_FALSE(test::Exists(req_.state_base + "/" + StateDirName({root})));
  req_.config.apply_args = {"--link", "hard"};
  o = RunGeneration(req_);
  EXPECT_EQ(o.exit_code, 0) << o.message;
  EXPECT_EQ(Log().size(), 3u);
  // Replayed: the stored --link hard counts; given --link reflink for this run, refused.
  RunRequest replay;
  replay.tool_dir = req_.tool_dir;
  replay.state_base = req_.state_base;
  replay.config.apply_args = {"--link=reflink"};
  o = RunGeneration(replay);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.message.find("is on tmpfs"), std::string::npos) << o.message;
  EXPECT_TRUE(Log().empty());
  test::RemoveTree(root);
}

// Each run keeps a record: the steps with their exit codes and the tools' summaries, the
// totals; a failed step is recorded too, and StatusOf gives the newest records.
TEST_F(RunGenerationTest, EachRunKeepsARecord) {
  ASSERT_EQ(RunGeneration(req_).exit_code, 0);
  test::WriteFile(t_.Join("rc-oans-plan"), "2");
  ASSERT_EQ(RunGeneration(req_).exit_code, 2);
  auto status = StatusOf(StateDir(), 5);
  ASSERT_OK(status.status());
  const Json& s = *status;
  EXPECT_EQ(s["state_dir"], StateDir());
  EXPECT_EQ(s["roots"], Json::array({"/proc"}));
  EXPECT_TRUE(s["running"].is_null()) << s.dump();
  ASSERT_EQ(s["generations"].size(), 2u) << s.dump();
  const Json& ok = s["generations"][0];
  EXPECT_EQ(ok["generation"], 1);
  EXPECT_EQ(ok["pid"], ::getpid());
  EXPECT_EQ(ok["exit_code"], 0);
  EXPECT_EQ(ok["phase"], "done");
  EXPECT_TRUE(ok["started"].is_string() && ok["ended"].is_string()) << ok.dump();
  ASSERT_EQ(ok["steps"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ok["steps"][i]["tool"], std::vector<std::string>({"scan", "plan", "apply"})[i]);
    EXPECT_EQ(ok["steps"][i]["exit_code"], 0);
    EXPECT_TRUE(ok["steps"][i]["seconds"].is_number());
    EXPECT_EQ(ok["steps"][i]["summary"]["files"], 7);
  }
  EXPECT_EQ(ok["files_scanned"], 7);
  EXPECT_EQ(ok["files_read"], 2);
  EXPECT_EQ(ok["bytes_planned"], 8192);
  EXPECT_EQ(ok["bytes_deduped"], 4096);
  EXPECT_EQ(ok["skipped"], Json({{"differs", 4096}}));
  const Json& failed = s["generations"][1];
  EXPECT_EQ(failed["exit_code"], 2);
  EXPECT_NE(failed["message"].get<std::string>().find("the plan failed (exit 2)"), std::string::npos);
  ASSERT_EQ(failed["steps"].size(), 2u);
  EXPECT_EQ(failed["steps"][1]["exit_code"], 2);
  EXPECT_TRUE(failed["steps"][1]["summary"].is_null());
  EXPECT_FALSE(failed.contains("bytes_planned"));
  // No summary file is left in the state directory.
  for (const auto& name : test::ListDir(StateDir())) EXPECT_NE(name.rfind(".summary", 0), 0u) << name;
  EXPECT_EQ((*StatusOf(StateDir(), 1))["generations"].size(), 1u);
}

// While a run holds the lock, StatusOf says so, with its step, from the record.
TEST_F(RunGenerationTest, StatusShowsARunInProgress) {
  test::WriteFile(t_.Join("bin/oans-plan"),
                  "#!/bin/sh\n"
                  "touch " + t_.Join("planning") + "\n"
                  "while [ ! -e " + t_.Join("go") + " ]; do sleep 0.05; done\n"
                  "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo data > \"$2\"; shift; done\n");
  RunOutcome out;
  std::thread run([&] { out = RunGeneration(req_); });
  for (int i = 0; i < 400 && !test::Exists(t_.Join("planning")); ++i) ::usleep(10000);
  // The lock holds our pid; StatusOf tells an oans process by its name, which this test's is not.
  auto s = StatusOf(StateDir(), 3);
  test::WriteFile(t_.Join("go"), "");
  run.join();
  ASSERT_OK(s.status());
  ASSERT_EQ((*s)["generations"].size(), 1u);
  const Json& g = (*s)["generations"][0];
  EXPECT_EQ(g["phase"], "plan") << g.dump();
  EXPECT_TRUE(g["ended"].is_null());
  EXPECT_EQ(g["steps"][0]["exit_code"], 0);
  EXPECT_TRUE(g["steps"][1]["exit_code"].is_null());
  EXPECT_EQ(out.exit_code, 0) << out.message;
  EXPECT_EQ((*StatusOf(StateDir(), 3))["generations"][0]["phase"], "done");
}

}  // namespace
}  // namespace oans
