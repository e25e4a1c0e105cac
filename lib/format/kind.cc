#include "lib/format/kind.h"

#include <capnp/serialize.h>
#include <kj/exception.h>

#include "format/index.capnp.h"
#include "format/plan.capnp.h"
#include "lib/format/frame_stream.h"
#include "lib/format/index_file.h"
#include "lib/format/plan_file.h"

namespace oans {
namespace {

Status NotOurs(const std::string& name, const std::string& why) {
  return Status::Corrupt(name + " is not an oans index or plan (" + why +
                         "); give an index written by oans-scan or a plan written by oans-plan");
}

// The kind a decoded first message names, or nothing.
bool KindOf(const kj::Array<capnp::word>& words, FileKind* kind) {
  capnp::FlatArrayMessageReader reader(words, FrameReader::Options(words.size()));
  auto index = reader.getRoot<schema::IndexFrame>();
  if (index.which() == schema::IndexFrame::HEADER && index.getHeader().getMagic() == kj::StringPtr(kIndexMagic)) {
    *kind = FileKind::kIndex;
    return true;
  }
  auto plan = reader.getRoot<schema::PlanFrame>();
  if (plan.which() == schema::PlanFrame::HEADER && plan.getHeader().getMagic() == kj::StringPtr(kPlanMagic)) {
    *kind = FileKind::kPlan;
    return true;
  }
  return false;
}

}  // namespace

Result<FileKind> DetectFileKind(const std::string& path) {
  OANS_ASSIGN_OR_RETURN(auto in, InputFile::Open(path));
  const std::string name = (in)->name();
  FrameReader frames((in)->fd(), name);
  kj::Array<capnp::word> words;
  auto next = frames.Next(&words);
  if (!next.ok()) {
    if (next.status().code() == Status::Code::kCorrupt) return NotOurs(name, next.status().message());
    return next.status();
  }
  if (!*next) return NotOurs(name, "it is empty");
  FileKind kind = FileKind::kIndex;
  bool known = false;
  KJ_IF_MAYBE(exc, kj::runCatchingExceptions([&]() { known = KindOf(words, &kind); })) {
    return NotOurs(name, "its first message is damaged: " + std::string(exc->getDescription().cStr()));
  }
  if (!known) return NotOurs(name, "no header with either format's magic");
  return kind;
}

}  // namespace oans
