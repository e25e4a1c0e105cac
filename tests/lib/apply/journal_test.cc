#include "lib/apply/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

class JournalTest : public ::testing::Test {
 protected:
  PlanHeader Header(uint64_t rounds) {
    PlanHeader h;
    h.created_ns = 1234567;
    h.rounds = rounds;
    return h;
  }
  std::string HeaderLine(uint64_t rounds) {
    return "oans-journal 1 plan-created 1234567 rounds " + std::to_string(rounds) + "\n";
  }
  Result<std::unique_ptr<Journal>> Open(const std::string& path, uint64_t rounds = 200) {
    notice_.clear();
    return Journal::Open(path, Header(rounds), &notice_);
  }
  void WriteJournal(const std::string& path, const std::string& data, mode_t mode = 0600) {
    test::WriteFile(path, data);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }
  test::TempDir dir_;
  std::string notice_;
};

TEST(ParseJournalRounds, OnlyCompleteExactLinesCount) {
  EXPECT_EQ(ParseJournalRounds("done 1\ndone 5\n", 10), (std::set<uint64_t>{1, 5}));
  // "done 123" cut by a crash after "done 12": not round 12.
  EXPECT_EQ(ParseJournalRounds("done 1\ndone 12", 200), (std::set<uint64_t>{1}));
  for (const char* bad : {"done 012\n", "done +3\n", "done -1\n", "done 3x\n", "done 3 \n", " done 3\n", "done\n",
                          "done \n", "done 99999999999999999999\n", "Done 3\n", "done 3\r\n"})
    EXPECT_TRUE(ParseJournalRounds(bad, 200).empty()) << bad;
  EXPECT_TRUE(ParseJournalRounds("done 10\n", 10).empty());  // beyond the plan's rounds
  EXPECT_EQ(ParseJournalRounds("\ndone 0\n\n", 10), (std::set<uint64_t>{0}));
}

TEST_F(JournalTest, CutLastLineIsIgnoredAndNotGluedToTheNext) {
  const std::string path = dir_.Join("j");
  WriteJournal(path, HeaderLine(200) + "done 7\ndone 12");  // was "done 123"
  {
    auto j = Open(path);
    ASSERT_OK(j.status());
    EXPECT_TRUE((*j)->Done(7));
    EXPECT_FALSE((*j)->Done(12));
    EXPECT_FALSE((*j)->Done(123));
    EXPECT_EQ((*j)->done_count(), 1u);
    ASSERT_OK((*j)->MarkDone(3));
  }
  auto j = Open(path);
  ASSERT_OK(j.status());
  EXPECT_EQ((*j)->done_count(), 2u);
  EXPECT_TRUE((*j)->Done(3));
  EXPECT_FALSE((*j)->Done(12));
  EXPECT_EQ(test::ReadFile(path), HeaderLine(200) + "done 7\ndone 3\n");  // the cut line dropped
}

TEST_F(JournalTest, CutHeaderStartsANewJournal) {
  const std::string path = dir_.Join("j");
  std::string head = HeaderLine(200);
  WriteJournal(path, head.substr(0, head.size() - 1));  // no newline: not the header
  auto j = Open(path);
  ASSERT_OK(j.status());
  EXPECT_EQ((*j)->done_count(), 0u);
  EXPECT_NE(notice_.find("another plan"), std::string::npos);
}

TEST_F(JournalTest, NewJournalIsPrivate) {
  const std::string path = dir_.Join("j");
  auto j = Open(path);
  ASSERT_OK(j.status());
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(test::ReadFile(path), HeaderLine(200));
}

TEST_F(JournalTest, SymlinkIsNeverFollowed) {
  const std::string victim = dir_.Join("victim");
  test::WriteFile(victim, "precious\n");
  ASSERT_EQ(::symlink(victim.c_str(), dir_.Join("j").c_str()), 0);
  auto j = Open(dir_.Join("j"));
  EXPECT_TRUE(test::StatusIs(j.status(), Status::Code::kInvalidArgument, "symbolic link"));
  EXPECT_EQ(test::ReadFile(victim), "precious\n");
  // A symlink to a journal of this very plan is refused just the same.
  WriteJournal(dir_.Join("real"), HeaderLine(200) + "done 1\n");
  ASSERT_EQ(::symlink(dir_.Join("real").c_str(), dir_.Join("k").c_str()), 0);
  EXPECT_FALSE(Open(dir_.Join("k")).ok());
}

TEST_F(JournalTest, JournalWritableByOthersIsRefused) {
  const std::string path = dir_.Join("j");
  WriteJournal(path, HeaderLine(200) + "done 1\n", 0666);
  auto j = Open(path);
  EXPECT_TRUE(test::StatusIs(j.status(), Status::Code::kInvalidArgument, "writable by other users"));
  EXPECT_NE(j.status().message().find(path), std::string::npos);
}

TEST_F(JournalTest, JournalOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  const std::string path = dir_.Join("j");
  WriteJournal(path, HeaderLine(200) + "done 1\n", 0644);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  EXPECT_TRUE(test::StatusIs(Open(path).status(), Status::Code::kInvalidArgument, "owned by uid 65534"));
}

TEST_F(JournalTest, JournalInOpenDirectoryIsRefused) {
  test::MakeDir(dir_.Join("open"));
  ASSERT_EQ(::chmod(dir_.Join("open").c_str(), 0777), 0);
  auto j = Open(dir_.Join("open/j"));
  EXPECT_TRUE(test::StatusIs(j.status(), Status::Code::kInvalidArgument, "no sticky bit"));
  EXPECT_FALSE(test::Exists(dir_.Join("open/j")));
}

TEST_F(JournalTest, StaleRenameDoesNotFollowASymlink) {
  const std::string path = dir_.Join("j");
  const std::string victim = dir_.Join("victim");
  test::WriteFile(victim, "precious\n");
  WriteJournal(path, "oans-journal 1 plan-created 1 rounds 3\ndone 0\n");
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".stale").c_str()), 0);
  auto j = Open(path);
  ASSERT_OK(j.status());
  EXPECT_NE(notice_.find(path + ".stale"), std::string::npos) << notice_;
  EXPECT_EQ(test::ReadFile(victim), "precious\n");
  EXPECT_EQ(test::ReadFile(path + ".stale"), "oans-journal 1 plan-created 1 rounds 3\ndone 0\n");
  struct stat st;
  ASSERT_EQ(::lstat((path + ".stale").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(test::ReadFile(path), HeaderLine(200));
}

TEST_F(JournalTest, MarkDoneFromManyThreads) {
  const std::string path = dir_.Join("j");
  constexpr int kThreads = 4, kEach = 150;
  {
    auto j = Open(path, kThreads * kEach);
    ASSERT_OK(j.status());
    Journal* journal = j->get();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([journal, t] {
        for (int i = 0; i < kEach; ++i) {
          Status s = journal->MarkDone(uint64_t(t * kEach + i));
          if (!s.ok()) ADD_FAILURE() << s.message();
          (void)journal->done_count();
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(journal->done_count(), size_t(kThreads * kEach));
  }
  auto j = Open(path, kThreads * kEach);
  ASSERT_OK(j.status());
  EXPECT_EQ((*j)->done_count(), size_t(kThreads * kEach));
}

}  // namespace
}  // namespace oans
