#include "lib/format/kind.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "format/index.capnp.h"
#include "format/plan.capnp.h"
#include "lib/format/frame_stream.h"
#include "tests/lib/test_util.h"

namespace oans {
namespace {

using test::StatusIs;
using test::TempDir;

IndexHeader OneFsIndexHeader() {
  IndexHeader h;
  h.filesystems.resize(1);
  return h;
}

// A file of one message: a plan frame filled by `fill`.
void WriteOnePlanFrame(const std::string& path, const std::function<void(schema::PlanFrame::Builder)>& fill) {
  auto out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok());
  FrameWriter fw((*out)->fd(), path);
  capnp::MallocMessageBuilder msg;
  fill(msg.initRoot<schema::PlanFrame>());
  ASSERT_OK(fw.Write(msg));
  ASSERT_OK((*out)->Commit());
}

Status KindStatus(const std::string& path) { return DetectFileKind(path).status(); }

TEST(FileKind, IndexByItsMagic) {
  TempDir dir;
  FileEntry e;
  e.path = "/data/a";
  test::WriteIndex(dir.Join("x.idx"), OneFsIndexHeader(), {e});
  auto k = DetectFileKind(dir.Join("x.idx"));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(*k, FileKind::kIndex);
  // An interrupted scan's index (no trailer) is still an index.
  test::WriteIndex(dir.Join("cut.idx"), OneFsIndexHeader(), {e}, 2048, false);
  ASSERT_TRUE(DetectFileKind(dir.Join("cut.idx")).ok());
  EXPECT_EQ(*DetectFileKind(dir.Join("cut.idx")), FileKind::kIndex);
  // Only the first message is read: what follows is the reader's to judge.
  test::WriteFile(dir.Join("junk.idx"), test::ReadFile(dir.Join("x.idx")) + "junk");
  EXPECT_EQ(*DetectFileKind(dir.Join("junk.idx")), FileKind::kIndex);
}

TEST(FileKind, PlanByItsMagic) {
  TempDir dir;
  PlanHeader h;
  h.filesystems.resize(1);
  test::WritePlan(dir.Join("x.plan"), h, {});
  auto k = DetectFileKind(dir.Join("x.plan"));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(*k, FileKind::kPlan);
}

TEST(FileKind, EmptyFileIsNeither) {
  TempDir dir;
  test::WriteFile(dir.Join("empty"), "");
  Status s = KindStatus(dir.Join("empty"));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "is not an oans index or plan (it is empty)"));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, dir.Join("empty")));
}

TEST(FileKind, GarbageIsNeither) {
  TempDir dir;
  test::WriteFile(dir.Join("garbage"), test::RandomBytes(3000, 7));
  Status s = KindStatus(dir.Join("garbage"));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, "is not an oans index or plan"));
  EXPECT_TRUE(StatusIs(s, Status::Code::kCorrupt, dir.Join("garbage")));
  test::WriteFile(dir.Join("text"), "{\"type\":\"index-header\"}\n");
  EXPECT_TRUE(StatusIs(KindStatus(dir.Join("text")), Status::Code::kCorrupt, "is not an oans index or plan"));
}

TEST(FileKind, OtherMagicOrNoHeaderIsNeither) {
  TempDir dir;
  WriteOnePlanFrame(dir.Join("magic"), [](schema::PlanFrame::Builder f) { f.initHeader().setMagic("oans-planx"); });
  EXPECT_TRUE(StatusIs(KindStatus(dir.Join("magic")), Status::Code::kCorrupt, "not an oans index or plan"));
  WriteOnePlanFrame(dir.Join("trailer"), [](schema::PlanFrame::Builder f) { f.initTrailer().setRecords(1); });
  EXPECT_TRUE(StatusIs(KindStatus(dir.Join("trailer")), Status::Code::kCorrupt, "not an oans index or plan"));
}

TEST(FileKind, MissingFileIsAnIoError) {
  TempDir dir;
  EXPECT_EQ(KindStatus(dir.Join("missing")).code(), Status::Code::kIoError);
}

}  // namespace
}  // namespace oans
