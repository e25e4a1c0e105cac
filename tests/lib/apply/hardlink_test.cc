// Hardlink mode's rules on real files: what two files must share to be linked, writers
// (a process holding either file open for writing, one that opens it during the compare
// or while the names are exchanged) never lose data, and hidden names left by a killed
// run are removed only when nothing in them can be lost.
#include "lib/apply/hardlink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>

#include "lib/apply/journal.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::TempDir;

// Real system calls; a test may make a lease look broken at a chosen moment.
class LeaseSys : public test::ForwardingSys {
 public:
  std::function<bool(int)> lease_held;  // null: ask the kernel
  int exchanges = 0;
  bool LeaseHeld(int fd) override { return lease_held ? lease_held(fd) : ForwardingSys::LeaseHeld(fd); }
  Status ExchangeAt(int dirfd, const std::string& a, const std::string& b) override {
    exchanges++;
    return ForwardingSys::ExchangeAt(dirfd, a, b);
  }
  Status LinkAt(int fd, int dirfd, const std::string& name) override {
    if (on_link) on_link();
    return ForwardingSys::LinkAt(fd, dirfd, name);
  }
  std::function<void()> on_link;
  // Each fsync's inode; fails with EIO when fsync_fails.
  Status Fsync(int fd) override {
    if (on_fsync) on_fsync(fd);
    if (fsync_fails) return Status::Io("fsync", EIO);
    return ForwardingSys::Fsync(fd);
  }
  std::function<void(int)> on_fsync;
  bool fsync_fails = false;
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    if (pread_fails) return Status::Io("pread", EIO);
    return ForwardingSys::Pread(fd, buf, len, offset);
  }
  bool pread_fails = false;
};

class RecordingLog : public LinkIntentLog {
 public:
  Status Begin(const LinkIntent& in) override {
    begun.push_back(in);
    return Status::Ok();
  }
  Status End(const LinkIntent& in) override {
    ended.push_back(in);
    return Status::Ok();
  }
  std::vector<LinkIntent> begun, ended;
};

class HardlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    dst_ = dir_.Join("dst");
    test::WriteFile(src_, test::RandomBytes(3 << 20, 7));
    test::WriteFile(dst_, test::RandomBytes(3 << 20, 7));
    ::chmod(src_.c_str(), 0640);
    ::chmod(dst_.c_str(), 0640);
  }
  PlanFileRef Ref(const std::string& path) const {
    FileStat st = test::StatPath(path);
    return {path, 0, st.dev, st.ino, st.size, st.mtime_ns, st.nlink, {}};
  }
  // Links dst to src through the executor; the round's result.
  RoundResult Link(LinkPolicy policy = {}) {
    PreparedRound r;
    if (!other_mtime_) {  // files rewritten by a test keep equal mtimes
      struct stat st;
      ::stat(src_.c_str(), &st);
      struct timespec times[2] = {st.st_atim, st.st_mtim};
      ::utimensat(AT_FDCWD, dst_.c_str(), times, 0);
    }
    r.round.files = {Ref(src_), Ref(dst_)};
    r.round.files[0].other_paths = src_names_;
    r.round.files[0].unread = r.round.files[1].unread = paired_;
    PlanOp op;
    op.source = 0;
    op.length = r.round.files[0].size;
    op.dests.push_back({1, 0, 0});
    r.round.ops.push_back(op);
    for (const auto& f : r.round.files) {
      auto fd = sys_.OpenNoFollow(f.path);
      EXPECT_TRUE(fd.ok());
      r.fds.emplace_back(sys_, *fd);
    }
    if (after_open_) after_open_();
    r.problem.assign(2, "");
    r.transient.assign(2, false);
    PacedSys sys(sys_, 0);
    HardlinkExecutor ex(sys, policy, &log_);
    RoundResult out;
    ex.Run(r, &out, [](uint64_t) {});
    return out;
  }
  bool Linked() const { return test::StatPath(src_).ino == test::StatPath(dst_).ino; }
  std::string Reasons(const RoundResult& r) const {
    std::string s;
    for (const auto& [k, v] : r.skipped) s += k + ";";
    return s;
  }
  void ExpectNoHiddenNames() const {
    for (const auto& n : test::ListDir(dir_.path()))
      EXPECT_EQ(n.find("oans-link"), std::string::npos) << "left behind: " << n;
  }

  TempDir dir_;
  std::string src_, dst_;
  bool other_mtime_ = false;
  bool paired_ = false;  // the plan paired them by size alone (the scan read neither)
  std::vector<std::string> src_names_;  // the source's other names, as the plan gives them
  std::function<void()> after_open_;    // runs once the round's files are open
  LeaseSys sys_;
  RecordingLog log_;
};

// Three copies in one group: the second destination is linked too. The source then has
// a name the plan does not know (the first destination's), which this run gave it.
TEST_F(HardlinkTest, AThirdCopyJoinsTheFirstTwo) {
  const std::string dst2 = dir_.Join("dst2");
  test::WriteFile(dst2, test::RandomBytes(3 << 20, 7));
  ::chmod(dst2.c_str(), 0640);
  struct stat st;
  ::stat(src_.c_str(), &st);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ::utimensat(AT_FDCWD, dst_.c_str(), times, 0);
  ::utimensat(AT_FDCWD, dst2.c_str(), times, 0);
  PreparedRound r;
  r.round.files = {Ref(src_), Ref(dst_), Ref(dst2)};
  PlanOp op;
  op.source = 0;
  op.length = r.round.files[0].size;
  op.dests = {{1, 0, 0}, {2, 0, 0}};
  r.round.ops.push_back(op);
  for (const auto& f : r.round.files) {
    auto fd = sys_.OpenNoFollow(f.path);
    ASSERT_TRUE(fd.ok());
    r.fds.emplace_back(sys_, *fd);
  }
  r.problem.assign(3, "");
  r.transient.assign(3, false);
  // Both intents are recorded before the first link is made, and ended after the last.
  std::vector<std::pair<size_t, size_t>> at_link;
  sys_.on_link = [&] { at_link.push_back({log_.begun.size(), log_.ended.size()}); };
  PacedSys sys(sys_, 0);
  HardlinkExecutor ex(sys, LinkPolicy{}, &log_);
  RoundResult out;
  ex.Run(r, &out, [](uint64_t) {});
  EXPECT_EQ(at_link, (std::vector<std::pair<size_t, size_t>>{{2, 0}, {2, 0}}));
  EXPECT_EQ(log_.ended.size(), 2u);
  EXPECT_EQ(out.files_linked, 2u) << Reasons(out);
  EXPECT_EQ(test::StatPath(dst2).ino, test::StatPath(src_).ino);
  EXPECT_EQ(test::StatPath(src_).nlink, 3u);
  EXPECT_EQ(test::ReadFile(dst2), test::RandomBytes(3 << 20, 7));
  ExpectNoHiddenNames();
}

// The destination's directory is synced (fsync: its entries committed, no syncfs) before
// the intent is ended: the journal may lie on another filesystem.
TEST_F(HardlinkTest, TheDirectoryIsSyncedBeforeTheIntentEnds) {
  std::vector<std::pair<uint64_t, size_t>> synced;  // (inode, intents ended by then)
  sys_.on_fsync = [&](int fd) {
    struct stat st;
    ASSERT_EQ(::fstat(fd, &st), 0);
    synced.push_back({st.st_ino, log_.ended.size()});
  };
  RoundResult r = Link();
  EXPECT_TRUE(Linked()) << Reasons(r);
  EXPECT_EQ(synced, (std::vector<std::pair<uint64_t, size_t>>{{test::StatPath(dir_.path()).ino, 0}}));
  EXPECT_EQ(log_.ended.size(), 1u);
}

// A directory that cannot be synced keeps its intent open: the next run checks its
// hidden name (RecoverLink) rather than trust a change that may not be on disk.
TEST_F(HardlinkTest, AnIntentWhoseDirectoryCannotBeSyncedStaysOpen) {
  sys_.fsync_fails = true;
  RoundResult r = Link();
  EXPECT_TRUE(Linked()) << Reasons(r);
  EXPECT_EQ(log_.begun.size(), 1u);
  EXPECT_TRUE(log_.ended.empty());
  EXPECT_EQ(r.errors, 1u);
}

// The destination's directory swapped, after the link, for a symlink to a directory
// elsewhere or for another directory: neither is synced in its place, and the intent
// stays open for the next run.
TEST_F(HardlinkTest, ASwappedDirectoryIsNotSyncedInItsPlace) {
  for (bool symlink : {true, false}) {
    TempDir elsewhere;
    const std::string top = dir_.path();
    const std::string moved = elsewhere.Join("moved");
    std::vector<uint64_t> synced;
    sys_.on_fsync = [&](int fd) {
      struct stat st;
      ASSERT_EQ(::fstat(fd, &st), 0);
      synced.push_back(st.st_ino);
    };
    sys_.on_link = [&] {
      ASSERT_EQ(::rename(top.c_str(), moved.c_str()), 0);
      if (symlink) ASSERT_EQ(::symlink(moved.c_str(), top.c_str()), 0);
      else ASSERT_EQ(::mkdir(top.c_str(), 0755), 0);
      sys_.on_link = nullptr;
    };
    log_ = RecordingLog();
    RoundResult r = Link();
    ASSERT_TRUE(::unlink(top.c_str()) == 0 || ::rmdir(top.c_str()) == 0) << symlink << ": " << strerror(errno);
    ASSERT_EQ(::rename(moved.c_str(), top.c_str()), 0);
    EXPECT_TRUE(Linked()) << Reasons(r) << symlink;
    EXPECT_TRUE(synced.empty()) << symlink;
    EXPECT_EQ(log_.begun.size(), 1u);
    EXPECT_TRUE(log_.ended.empty()) << symlink;
    EXPECT_EQ(r.errors, 1u);
    ASSERT_EQ(::unlink(dst_.c_str()), 0);  // apart again for the next pass
    test::WriteFile(dst_, test::RandomBytes(3 << 20, 7));
    ::chmod(dst_.c_str(), 0640);
  }
}

TEST_F(HardlinkTest, LinksIdenticalFilesWithTheSameMetadata) {
  RoundResult r = Link();
  EXPECT_EQ(r.files_linked, 1u) << Reasons(r);
  EXPECT_TRUE(Linked());
  EXPECT_EQ(test::ReadFile(dst_), test::RandomBytes(3 << 20, 7));
  ASSERT_EQ(log_.begun.size(), 1u);
  EXPECT_EQ(log_.ended.size(), 1u);
  ExpectNoHiddenNames();
}

TEST_F(HardlinkTest, OtherModeIsNotLinkedUnlessRelaxed) {
  ::chmod(dst_.c_str(), 0600);
  RoundResult r = Link();
  EXPECT_EQ(r.files_linked, 0u);
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("other permissions"), std::string::npos) << Reasons(r);
  EXPECT_FALSE(r.retry);
  LinkPolicy relaxed;
  relaxed.same_mode = false;
  EXPECT_EQ(Link(relaxed).files_linked, 1u);
}

// A pair by size alone that a rule refuses is compared first: an equal one is told as
// refused, one that differs is counted as such (no skip), and a compare that fails is an
// error, not the refusal.
TEST_F(HardlinkTest, APairBySizeARuleRefusesIsComparedFirst) {
  paired_ = true;
  ::chmod(dst_.c_str(), 0600);
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("other permissions"), std::string::npos) << Reasons(r);
  EXPECT_EQ(r.bytes_differed, 0u);

  test::WriteFile(dst_, test::RandomBytes(3 << 20, 8));
  ::chmod(dst_.c_str(), 0600);
  r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_TRUE(r.skipped.empty()) << Reasons(r);
  EXPECT_EQ(r.bytes_differed, uint64_t(3 << 20));
  EXPECT_EQ(r.errors, 0u);

  sys_.pread_fails = true;
  r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_EQ(Reasons(r).find("other permissions"), std::string::npos) << Reasons(r);
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(r.bytes_differed, 0u);
}

TEST_F(HardlinkTest, OtherOwnerOrGroupIsNotLinked) {
  ASSERT_EQ(::chown(dst_.c_str(), 65534, 65534), 0) << "needs root";
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("another owner"), std::string::npos) << Reasons(r);
  ASSERT_EQ(::chown(dst_.c_str(), ::getuid(), 65534), 0);
  ::chmod(dst_.c_str(), 0640);  // chown clears nothing here, but keep the mode equal
  r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("another group"), std::string::npos) << Reasons(r);
}

TEST_F(HardlinkTest, SetuidAndSetgidFilesAreNeverLinked) {
  for (mode_t m : {04750, 02750}) {
    ::chmod(src_.c_str(), m);
    ::chmod(dst_.c_str(), m);
    LinkPolicy anything;
    anything.same_owner = anything.same_mode = anything.same_xattrs = false;
    RoundResult r = Link(anything);
    EXPECT_FALSE(Linked());
    EXPECT_NE(Reasons(r).find("setuid or setgid"), std::string::npos) << Reasons(r);
  }
}

TEST_F(HardlinkTest, OtherExtendedAttributesAreNotLinked) {
  ASSERT_EQ(::setxattr(dst_.c_str(), "user.tag", "x", 1, 0), 0);
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("extended attributes"), std::string::npos) << Reasons(r);
  ASSERT_EQ(::setxattr(src_.c_str(), "user.tag", "x", 1, 0), 0);
  EXPECT_EQ(Link().files_linked, 1u);
}

TEST_F(HardlinkTest, OtherMtimeIsNotLinkedUnlessRelaxed) {
  other_mtime_ = true;
  struct timespec times[2] = {{1, 0}, {1, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dst_.c_str(), times, 0), 0);
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("another mtime"), std::string::npos) << Reasons(r);
  LinkPolicy relaxed;
  relaxed.same_mtime = false;
  EXPECT_EQ(Link(relaxed).files_linked, 1u);
}

TEST_F(HardlinkTest, DestinationWithOtherNamesIsNeverLinked) {
  ASSERT_EQ(::link(dst_.c_str(), dir_.Join("dst2").c_str()), 0);
  LinkPolicy anything;
  anything.same_owner = anything.same_mode = anything.same_xattrs = anything.same_mtime = false;
  anything.same_reach = false;
  RoundResult r = Link(anything);
  EXPECT_FALSE(Linked());
  EXPECT_EQ(test::StatPath(dst_).ino, test::StatPath(dir_.Join("dst2")).ino) << "the file was split";
  EXPECT_NE(Reasons(r).find("has other hardlinks"), std::string::npos) << Reasons(r);
}

TEST_F(HardlinkTest, NamesOtherUsersReachAreNotLinkedUnlessRelaxed) {
  // dst moves into a directory only its owner may search: fewer users reach it. (Two
  // directories of one owner, both searchable by her alone, are one constraint.)
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir_.Join("private").c_str(), 0700), 0);
  const std::string moved = dir_.Join("private/dst");
  ASSERT_EQ(::rename(dst_.c_str(), moved.c_str()), 0);
  dst_ = moved;
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("other users can reach its source"), std::string::npos) << Reasons(r);
  // Searchable by all, the directory constrains nothing: the same users reach both.
  ASSERT_EQ(::chmod(dir_.Join("private").c_str(), 0711), 0);
  EXPECT_EQ(Link().files_linked, 1u) << "a directory everyone may search changes no one's reach";
}

TEST_F(HardlinkTest, ReachThroughAnOtherNameOfTheSource) {
  ASSERT_EQ(::mkdir(dir_.Join("open").c_str(), 0755), 0);
  ASSERT_EQ(::link(src_.c_str(), dir_.Join("open/src2").c_str()), 0);
  RoundResult r = Link();  // the plan does not name the second link
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("cannot be decided"), std::string::npos) << Reasons(r);
  src_names_ = {dir_.Join("open/src2")};
  EXPECT_EQ(Link().files_linked, 1u) << Reasons(r);
  // Behind a private directory, the second name is reached by fewer users than dst.
  ::unlink(dst_.c_str());
  test::WriteFile(dst_, test::RandomBytes(3 << 20, 7));
  ::chmod(dst_.c_str(), 0640);
  ASSERT_EQ(::chmod(dir_.Join("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("other users can reach its source"), std::string::npos) << Reasons(r);
}

TEST_F(HardlinkTest, ANameThroughASymlinkedDirectoryIsNotCounted) {
  // The source's second name sits in a private directory. The plan gives it through a
  // public symlink to the private tree: followed, the name would look public.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir_.Join("p").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(dir_.Join("p/sub").c_str(), 0755), 0);
  ASSERT_EQ(::link(src_.c_str(), dir_.Join("p/sub/src2").c_str()), 0);
  ASSERT_EQ(::mkdir(dir_.Join("pub").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir_.Join("p/sub").c_str(), dir_.Join("pub/link").c_str()), 0);
  src_names_ = {dir_.Join("pub/link/src2")};
  RoundResult r = Link();
  EXPECT_FALSE(Linked()) << "a private name was judged by the path of a symlink to it";
  EXPECT_NE(Reasons(r).find("cannot be decided"), std::string::npos) << Reasons(r);
  // Given by its real path, the name is private: refused for what it is.
  src_names_ = {dir_.Join("p/sub/src2")};
  r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("other users can reach its source"), std::string::npos) << Reasons(r);
}

TEST_F(HardlinkTest, ThePlansSourcePathIsCheckedLikeItsOtherNames) {
  // The source has three names: two in a private directory the plan knows, one public the
  // scan never saw. Its plan path goes away after apply opened it: the two names counted
  // must still be names of the file, or the public one would go unchecked.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir_.Join("p").c_str(), 0700), 0);
  const std::string a = dir_.Join("p/a"), b = dir_.Join("p/b"), q = dir_.Join("q");
  ASSERT_EQ(::rename(src_.c_str(), a.c_str()), 0);
  ASSERT_EQ(::link(a.c_str(), b.c_str()), 0);
  ASSERT_EQ(::link(a.c_str(), q.c_str()), 0);
  const std::string moved = dir_.Join("p/dst");
  ASSERT_EQ(::rename(dst_.c_str(), moved.c_str()), 0);
  src_ = a;
  dst_ = moved;
  src_names_ = {b};
  after_open_ = [&] { ::unlink(a.c_str()); };
  RoundResult r = Link();
  EXPECT_NE(test::StatPath(dst_).ino, test::StatPath(q).ino) << "the private copy was linked to a public name";
  EXPECT_NE(Reasons(r).find("cannot be decided"), std::string::npos) << Reasons(r);
}

TEST_F(HardlinkTest, FileOpenForWritingIsNotLinked) {
  for (const std::string& which : {dst_, src_}) {
    int w = ::open(which.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(w, 0);
    RoundResult r = Link();
    EXPECT_FALSE(Linked());
    EXPECT_NE(Reasons(r).find("open for writing by another process"), std::string::npos) << Reasons(r);
    EXPECT_TRUE(r.retry) << "a writer may be gone by the next run";
    // The writer's later writes still land in the file at its path.
    ASSERT_EQ(::write(w, "tail", 4), 4);
    ::close(w);
    EXPECT_EQ(test::ReadFile(which).substr(3 << 20), "tail");
    test::WriteFile(which, test::RandomBytes(3 << 20, 7));
  }
  ExpectNoHiddenNames();
}

TEST_F(HardlinkTest, WriterDuringTheCompareStopsIt) {
  sys_.lease_held = [](int) { return false; };  // as after a lease break
  RoundResult r = Link();
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("during the compare"), std::string::npos) << Reasons(r);
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(sys_.exchanges, 0);
}

TEST_F(HardlinkTest, WriterDuringTheExchangeGetsTheOldFileBack) {
  const uint64_t old_ino = test::StatPath(dst_).ino;
  // Leases hold through the compare, then break after the names were exchanged.
  sys_.lease_held = [&](int) { return sys_.exchanges == 0; };
  RoundResult r = Link();
  EXPECT_EQ(sys_.exchanges, 2) << "the exchange was not undone";
  EXPECT_EQ(test::StatPath(dst_).ino, old_ino);
  EXPECT_FALSE(Linked());
  EXPECT_NE(Reasons(r).find("while being linked"), std::string::npos) << Reasons(r);
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(test::ReadFile(dst_), test::RandomBytes(3 << 20, 7));
  EXPECT_EQ(log_.ended.size(), log_.begun.size());
  ExpectNoHiddenNames();
}

class RecoverLinkTest : public HardlinkTest {
 protected:
  LinkIntent Intent(const std::string& tmp) const {
    LinkIntent in;
    in.dir = dir_.path();
    in.tmp = tmp;
    FileStat s = test::StatPath(src_), d = test::StatPath(dst_);
    in.src_ino = s.ino;
    in.dst_ino = d.ino;
    in.dst_size = d.size;
    in.dst_mtime_ns = d.mtime_ns;
    return in;
  }
};

TEST_F(RecoverLinkTest, RemovesASecondLinkOfTheSource) {
  const std::string tmp = ".dst.oans-link-0123456789abcdef";
  LinkIntent in = Intent(tmp);
  ASSERT_EQ(::link(src_.c_str(), dir_.Join(tmp).c_str()), 0);
  std::string notice;
  EXPECT_OK(RecoverLink(sys_, in, &notice));
  EXPECT_FALSE(test::Exists(dir_.Join(tmp)));
  EXPECT_TRUE(test::Exists(src_));
  EXPECT_TRUE(notice.empty());
}

// The directory is synced after the hidden name goes, before the intent may end; a
// directory that cannot be synced keeps the intent (an error).
TEST_F(RecoverLinkTest, SyncsTheDirectoryAfterRemovingAName) {
  const std::string tmp = ".dst.oans-link-0123456789abcdef";
  LinkIntent in = Intent(tmp);
  std::vector<std::pair<uint64_t, bool>> synced;  // (inode, the name gone by then)
  sys_.on_fsync = [&](int fd) {
    struct stat st;
    ASSERT_EQ(::fstat(fd, &st), 0);
    synced.push_back({st.st_ino, !test::Exists(dir_.Join(tmp))});
  };
  ASSERT_EQ(::link(src_.c_str(), dir_.Join(tmp).c_str()), 0);
  std::string notice;
  EXPECT_OK(RecoverLink(sys_, in, &notice));
  EXPECT_EQ(synced, (std::vector<std::pair<uint64_t, bool>>{{test::StatPath(dir_.path()).ino, true}}));
  // Already removed (by the killed run, perhaps not synced): synced all the same.
  synced.clear();
  EXPECT_OK(RecoverLink(sys_, in, &notice));
  EXPECT_EQ(synced, (std::vector<std::pair<uint64_t, bool>>{{test::StatPath(dir_.path()).ino, true}}));
  ASSERT_EQ(::link(src_.c_str(), dir_.Join(tmp).c_str()), 0);
  sys_.fsync_fails = true;
  EXPECT_FALSE(RecoverLink(sys_, in, &notice).ok());
}

TEST_F(RecoverLinkTest, RemovesTheUnchangedOldDestinationAndKeepsAWrittenOne) {
  const std::string tmp = ".dst.oans-link-0123456789abcdef";
  LinkIntent in = Intent(tmp);
  // Killed after the exchange: the hidden name holds the old destination.
  ASSERT_EQ(::rename(dst_.c_str(), dir_.Join(tmp).c_str()), 0);
  ASSERT_EQ(::link(src_.c_str(), dst_.c_str()), 0);
  std::string notice;
  EXPECT_OK(RecoverLink(sys_, in, &notice));
  EXPECT_FALSE(test::Exists(dir_.Join(tmp)));

  // Same again, but a writer that had it open wrote to the old inode afterwards.
  ASSERT_EQ(::unlink(dst_.c_str()), 0);
  test::WriteFile(dst_, test::RandomBytes(3 << 20, 7));
  in = Intent(tmp);
  ASSERT_EQ(::rename(dst_.c_str(), dir_.Join(tmp).c_str()), 0);
  ASSERT_EQ(::link(src_.c_str(), dst_.c_str()), 0);
  test::WriteFile(dir_.Join(tmp), "the writer's data");
  EXPECT_OK(RecoverLink(sys_, in, &notice));
  EXPECT_EQ(test::ReadFile(dir_.Join(tmp)), "the writer's data");
  EXPECT_NE(notice.find("kept"), std::string::npos) << notice;
}

TEST_F(RecoverLinkTest, LeavesNamesItDidNotMake) {
  // A journal naming a file that is neither the source nor the old destination, or a
  // name oans never makes, removes nothing.
  const std::string tmp = ".dst.oans-link-0123456789abcdef";
  test::WriteFile(dir_.Join(tmp), "someone else's");
  std::string notice;
  EXPECT_OK(RecoverLink(sys_, Intent(tmp), &notice));
  EXPECT_TRUE(test::Exists(dir_.Join(tmp)));
  EXPECT_FALSE(RecoverLink(sys_, Intent("dst"), &notice).ok());
  EXPECT_TRUE(test::Exists(dst_));
  EXPECT_FALSE(RecoverLink(sys_, Intent("../x.oans-link-1"), &notice).ok());
}

TEST_F(RecoverLinkTest, JournalKeepsPendingIntentsAcrossOpen) {
  PlanHeader h;
  h.created_ns = 1;
  h.rounds = 3;
  const std::string path = dir_.Join("plan.journal");
  LinkIntent in = Intent(".dst.oans-link-00000000000000aa");
  in.dir = dir_.path() + "/with space\nand newline";
  {
    std::string notice;
    auto j = Journal::Open(path, h, &notice);
    ASSERT_TRUE(j.ok());
    EXPECT_OK((*j)->Begin(in));
    LinkIntent done = Intent(".dst.oans-link-00000000000000bb");
    EXPECT_OK((*j)->Begin(done));
    EXPECT_OK((*j)->End(done));
  }
  std::string notice;
  h.created_ns = 2;  // even a journal of another plan is read for them
  auto j = Journal::Open(path, h, &notice);
  ASSERT_TRUE(j.ok());
  auto pending = (*j)->Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].dir, in.dir);
  EXPECT_EQ(pending[0].tmp, in.tmp);
  EXPECT_EQ(pending[0].dst_ino, in.dst_ino);
}

}  // namespace
}  // namespace oans
