#include "tools/common/cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace oans::cli {
namespace {

// Local times in these tests are UTC.
class UntilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? tz : "";
    had_ = tz != nullptr;
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  void TearDown() override {
    if (had_) ::setenv("TZ", saved_.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
  }
  static time_t At(int y, int mo, int d, int h, int mi) {
    struct tm t {};
    t.tm_year = y - 1900;
    t.tm_mon = mo - 1;
    t.tm_mday = d;
    t.tm_hour = h;
    t.tm_min = mi;
    return timegm(&t);
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(UntilTest, ClockTimeLaterToday) {
  auto r = SecondsUntil("06:00", At(2026, 12, 1, 5, 0));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 3600u);
}

TEST_F(UntilTest, ClockTimeTomorrowWithinTheLimit) {
  // Started at 22:00 for a night window ending at 06:00: 8 hours.
  auto r = SecondsUntil("06:00", At(2026, 12, 1, 22, 0));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 8u * 3600);
}

TEST_F(UntilTest, MissedWindowIsRefused) {
  // Started a minute late: the next 06:00 is almost a day away.
  auto r = SecondsUntil("06:00", At(2026, 12, 1, 6, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("23h59m away"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("give the date"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'2026-12-02 06:00'"), std::string::npos) << r.status().message();
}

TEST_F(UntilTest, JustOverTheLimitIsRefusedJustUnderIsNot) {
  EXPECT_FALSE(SecondsUntil("06:00", At(2026, 12, 1, 11, 59)).ok());  // 18h01m
  auto r = SecondsUntil("06:00", At(2026, 12, 1, 12, 0));             // 18h exactly
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 18u * 3600);
}

TEST_F(UntilTest, DateAndTimeMayBeFarAhead) {
  auto r = SecondsUntil("2026-12-02 06:00", At(2026, 12, 1, 6, 1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 23u * 3600 + 59 * 60);
  auto t = SecondsUntil("2026-12-02T06:00", At(2026, 12, 1, 6, 1));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, *r);
}

TEST_F(UntilTest, DateInThePastIsRefused) {
  auto r = SecondsUntil("2026-12-01 06:00", At(2026, 12, 1, 6, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("in the past"), std::string::npos) << r.status().message();
}

TEST_F(UntilTest, MalformedTimesAreRefused) {
  for (const char* bad : {"6", "24:00", "06:60", "06:00x", "+6:00", "2026-13-01 06:00", "2026-12-01 6:00pm", ""})
    EXPECT_FALSE(SecondsUntil(bad, At(2026, 12, 1, 5, 0)).ok()) << bad;
}

TEST(EscapeLine, NewlinesAndBackslashesAreEscaped) {
  EXPECT_EQ(EscapeLine("plain/name.txt"), "plain/name.txt");
  EXPECT_EQ(EscapeLine("a\nb"), "a\\nb");
  EXPECT_EQ(EscapeLine("a\\nb"), "a\\\\nb");  // a real backslash-n stays distinguishable
  EXPECT_EQ(EscapeLine("x\n\n"), "x\\n\\n");
  EXPECT_EQ(EscapeLine("a\nb").find('\n'), std::string::npos);
}

// What oans run passes after the stored options overrides them: an option given twice
// takes its last value, a list adds up, and neither is refused.
TEST(Parse, AnOptionGivenAgainTakesItsLastValue) {
  CLI::App app{"test", "test"};
  uint64_t rate = 0;
  std::string until;
  std::vector<std::string> excludes;
  AddSize(app, "--max-rate", &rate, "rate");
  app.add_option("--until", until, "until");
  app.add_option("--exclude", excludes, "exclude")->allow_extra_args(false);
  std::vector<std::string> args = {"test",    "--max-rate", "200M",      "--exclude", "a", "--until=06:00",
                                   "--max-rate", "100M",   "--exclude", "b",         "--until", "07:00"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ASSERT_EQ(Parse(app, int(argv.size()), argv.data()), -1);
  EXPECT_EQ(rate, 100u << 20);
  EXPECT_EQ(until, "07:00");
  EXPECT_EQ(excludes, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace oans::cli
