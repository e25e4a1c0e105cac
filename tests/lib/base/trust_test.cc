#include "lib/base/trust.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uid_t kNobody = 65534;

// A temporary directory whose own ancestors pass the check (skips otherwise: the
// machine's TMPDIR itself would be refused).
class TrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fd = ::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    Status s = CheckTrustedDirectory(fd, "test directory", dir_.path());
    ::close(fd);
    if (!s.ok()) GTEST_SKIP() << "the temporary directory is not trusted itself: " << s.message();
  }
  Status Check(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return Status::Io("open " + path, errno);
    Status s = CheckTrustedFile(fd, "plan", path);
    ::close(fd);
    return s;
  }
  std::string File(const std::string& rel, mode_t mode) {
    std::string p = dir_.Join(rel);
    test::WriteFile(p, "plan");
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }
  test::TempDir dir_;
};

TEST(UntrustedReason, OwnerAndModeRules) {
  const uid_t me = 1000;
  EXPECT_EQ(UntrustedReason(0, 0644, false, me), "");
  EXPECT_EQ(UntrustedReason(me, 0600, false, me), "");
  EXPECT_NE(UntrustedReason(kNobody, 0600, false, me).find("owned by uid 65534"), std::string::npos);
  EXPECT_NE(UntrustedReason(me, 0666, false, me).find("writable by other users (mode 0666)"), std::string::npos);
  EXPECT_NE(UntrustedReason(me, 0664, false, me).find("writable by its group"), std::string::npos);
  // A shared directory is fine only with the sticky bit; a file's sticky bit means nothing.
  EXPECT_NE(UntrustedReason(0, 0777, true, me).find("no sticky bit"), std::string::npos);
  EXPECT_EQ(UntrustedReason(0, 01777, true, me), "");
  EXPECT_NE(UntrustedReason(0, 01666, false, me), "");
  EXPECT_NE(UntrustedReason(kNobody, 01777, true, me), "");
}

TEST_F(TrustTest, OwnPrivateFileIsTrusted) {
  EXPECT_OK(Check(File("a.plan", 0600)));
  EXPECT_OK(Check(File("b.plan", 0644)));
}

TEST_F(TrustTest, WorldOrGroupWritableFileIsRefused) {
  Status s = Check(File("a.plan", 0666));
  EXPECT_TRUE(test::StatusIs(s, Status::Code::kInvalidArgument, "writable by other users (mode 0666)"));
  EXPECT_NE(s.message().find(dir_.Join("a.plan")), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("install -d -m 0700"), std::string::npos) << s.message();  // how to fix
  EXPECT_TRUE(test::StatusIs(Check(File("b.plan", 0620)), Status::Code::kInvalidArgument, "its group"));
}

TEST_F(TrustTest, FileInOpenDirectoryIsRefused) {
  test::MakeDir(dir_.Join("shared"));
  std::string p = File("shared/a.plan", 0600);
  ASSERT_EQ(::chmod(dir_.Join("shared").c_str(), 0777), 0);
  Status s = Check(p);
  EXPECT_TRUE(test::StatusIs(s, Status::Code::kInvalidArgument, "the directory " + dir_.Join("shared") + " above it"));
  EXPECT_NE(s.message().find("no sticky bit"), std::string::npos) << s.message();
  // Deeper down it is refused all the same: every ancestor counts.
  test::MakeDir(dir_.Join("shared/deep"));
  EXPECT_FALSE(Check(File("shared/deep/b.plan", 0600)).ok());
  // With the sticky bit (as /tmp) only the owner can replace it: trusted.
  ASSERT_EQ(::chmod(dir_.Join("shared").c_str(), 01777), 0);
  EXPECT_OK(Check(p));
}

TEST_F(TrustTest, SymlinkIsJudgedByWhereTheFileReallyIs) {
  test::MakeDir(dir_.Join("open"));
  std::string p = File("open/a.plan", 0600);
  ASSERT_EQ(::chmod(dir_.Join("open").c_str(), 0777), 0);
  ASSERT_EQ(::symlink(p.c_str(), dir_.Join("link.plan").c_str()), 0);
  EXPECT_TRUE(test::StatusIs(Check(dir_.Join("link.plan")), Status::Code::kInvalidArgument, "open"));
}

TEST_F(TrustTest, FileOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  std::string p = File("a.plan", 0644);
  ASSERT_EQ(::chown(p.c_str(), kNobody, kNobody), 0);
  EXPECT_TRUE(test::StatusIs(Check(p), Status::Code::kInvalidArgument, "owned by uid 65534"));
}

TEST_F(TrustTest, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  test::MakeDir(dir_.Join("theirs"));
  std::string p = File("theirs/a.plan", 0600);
  ASSERT_EQ(::chown(dir_.Join("theirs").c_str(), kNobody, kNobody), 0);
  EXPECT_TRUE(test::StatusIs(Check(p), Status::Code::kInvalidArgument, "owned by uid 65534"));
}

TEST_F(TrustTest, NotARegularFile) {
  int fd = ::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(test::StatusIs(CheckTrustedFile(fd, "plan", dir_.path()), Status::Code::kInvalidArgument,
                             "not a regular file"));
  ::close(fd);
}

}  // namespace
}  // namespace oans
