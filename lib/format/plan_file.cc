#include "lib/format/plan_file.h"

#include <capnp/serialize.h>
#include <kj/exception.h>

#include "format/plan.capnp.h"
#include "lib/format/schema_io.h"
#include "lib/base/sys.h"

namespace oans {
namespace {

using schema_io::Bytes;
using schema_io::FromData;

// Decodes round `r` of plan `name` into *round, checking that it is round number
// `expected` and that every file, operation and destination it names is valid.
Status DecodeRound(schema::Round::Reader r, const std::string& name, uint64_t expected, size_t filesystems,
                   uint32_t version, PlanRound* round) {
  *round = PlanRound();
  round->index = r.getIndex();
  round->bytes = r.getBytes();
  if (round->index != expected)
    return Status::Corrupt(name + " is damaged (round " + std::to_string(round->index) + " where round " +
                           std::to_string(expected) + " was expected)");
  for (auto f : r.getFiles()) {
    PlanFileRef ref;
    ref.path = FromData(f.getPath());
    ref.fs = f.getFs();
    ref.dev = f.getDev();
    ref.ino = f.getIno();
    ref.size = f.getSize();
    ref.mtime_ns = f.getMtimeNs();
    ref.nlink = f.getNlink();
    ref.unread = f.getUnread();
    for (auto o : f.getOtherPaths()) ref.other_paths.push_back(FromData(o));
    bool names_ok = true;
    for (const auto& o : ref.other_paths) names_ok &= !o.empty() && o[0] == '/';
    if (ref.fs >= filesystems || ref.path.empty() || ref.path[0] != '/' || !names_ok)
      return Status::Corrupt(name + " is damaged (a file entry of round " + std::to_string(round->index) +
                             " is invalid)");
    round->files.push_back(std::move(ref));
  }
  const size_t nfiles = round->files.size();
  for (auto o : r.getOps()) {
    PlanOp op;
    op.source = o.getSource();
    op.offset = o.getOffset();
    op.length = o.getLength();
    op.physical = o.getPhysical();
    auto ds = o.getDests();
    if (op.source >= nfiles || op.length == 0 || ds.size() == 0 || ds.size() > kMaxDedupeDests)
      return Status::Corrupt(name + " is damaged (an operation of round " + std::to_string(round->index) +
                             " is invalid)");
    for (auto d : ds) {
      if (d.getFile() >= nfiles)
        return Status::Corrupt(name + " is damaged (a destination of round " + std::to_string(round->index) +
                               " is invalid)");
      op.dests.push_back({d.getFile(), d.getOffset(), d.getPhysical()});
      if (IsRewrite(op, op.dests.back()) && version < kPlanFormatVersion)  // rewrites came with version 2
        return Status::Corrupt(name + " is damaged (a rewrite in round " + std::to_string(round->index) +
                               " of a plan of format version " + std::to_string(version) + ")");
    }
    round->ops.push_back(std::move(op));
  }
  return Status::Ok();
}

}  // namespace

Status PlanWriter::WriteHeader(const PlanHeader& h) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<schema::PlanFrame>().initHeader();
  b.setMagic(kPlanMagic);
  b.setFormatVersion(h.format_version);
  b.setToolVersion(h.tool_version);
  b.setCreatedNs(h.created_ns);
  auto roots = b.initRoots(unsigned(h.roots.size()));
  for (unsigned i = 0; i < h.roots.size(); ++i) roots.set(i, Bytes(h.roots[i]));
  auto fss = b.initFilesystems(unsigned(h.filesystems.size()));
  for (unsigned i = 0; i < h.filesystems.size(); ++i) schema_io::WriteFs(fss[i], h.filesystems[i]);
  b.setRoundSize(h.round_size);
  b.setBlockSize(h.block_size);
  auto idx = b.initIndexes(unsigned(h.indexes.size()));
  for (unsigned i = 0; i < h.indexes.size(); ++i) idx.set(i, h.indexes[i]);
  auto cl = b.initCommandLine(unsigned(h.command_line.size()));
  for (unsigned i = 0; i < h.command_line.size(); ++i) cl.set(i, h.command_line[i]);
  b.setRounds(h.rounds);
  b.setGroups(h.groups);
  b.setDuplicateBytes(h.duplicate_bytes);
  b.setSharedBytes(h.shared_bytes);
  b.setPlannedBytes(h.planned_bytes);
  b.setRewriteBytes(h.rewrite_bytes);
  if (h.storage) b.setStorage(*h.storage == StorageKind::kHdd ? schema::Storage::HDD : schema::Storage::SSD);
  return frames_.Write(msg);
}

Status PlanWriter::AddRound(const PlanRound& r) {
  capnp::MallocMessageBuilder msg;
  BuildRound(r, msg);
  return frames_.Write(msg);
}

Status PlanWriter::AddRound(PlanRound&& r) {
  capnp::MallocMessageBuilder msg;
  BuildRound(r, msg);
  r = PlanRound();  // the message holds it all now
  return frames_.Write(msg);
}

void PlanWriter::BuildRound(const PlanRound& r, capnp::MessageBuilder& msg) {
  auto b = msg.initRoot<schema::PlanFrame>().initRound();
  b.setIndex(r.index);
  b.setBytes(r.bytes);
  auto files = b.initFiles(unsigned(r.files.size()));
  for (unsigned i = 0; i < r.files.size(); ++i) {
    const PlanFileRef& f = r.files[i];
    files[i].setPath(Bytes(f.path));
    files[i].setFs(f.fs);
    files[i].setDev(f.dev);
    files[i].setIno(f.ino);
    files[i].setSize(f.size);
    files[i].setMtimeNs(f.mtime_ns);
    files[i].setNlink(f.nlink);
    files[i].setUnread(f.unread);
    if (!f.other_paths.empty()) {
      auto names = files[i].initOtherPaths(unsigned(f.other_paths.size()));
      for (unsigned j = 0; j < f.other_paths.size(); ++j) names.set(j, Bytes(f.other_paths[j]));
    }
  }
  auto ops = b.initOps(unsigned(r.ops.size()));
  for (unsigned i = 0; i < r.ops.size(); ++i) {
    const PlanOp& o = r.ops[i];
    ops[i].setSource(o.source);
    ops[i].setOffset(o.offset);
    ops[i].setLength(o.length);
    ops[i].setPhysical(o.physical);
    auto d = ops[i].initDests(unsigned(o.dests.size()));
    for (unsigned j = 0; j < o.dests.size(); ++j) {
      d[j].setFile(o.dests[j].file);
      d[j].setOffset(o.dests[j].offset);
      d[j].setPhysical(o.dests[j].physical);
    }
    bytes_ += o.length * o.dests.size();
  }
  ops_ += r.ops.size();
  rounds_++;
}

Status PlanWriter::Finish() {
  capnp::MallocMessageBuilder msg;
  auto t = msg.initRoot<schema::PlanFrame>().initTrailer();
  t.setRecords(ops_);
  t.setBatches(rounds_);
  t.setBytes(bytes_);
  return frames_.Write(msg);
}

Result<std::unique_ptr<PlanReader>> PlanReader::Open(const std::string& path) {
  std::unique_ptr<PlanReader> p(new PlanReader());
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  p->in_ = std::move(*in);
  p->frames_ = std::make_unique<FrameReader>(p->in_->fd(), p->in_->name());
  const std::string name = p->in_->name();
  kj::Array<capnp::word> words;
  auto next = p->frames_->Next(&words);
  if (!next.ok()) {
    Status s = next.status();
    if (s.code() == Status::Code::kCorrupt) return Status::Corrupt(name + " is not an oans plan (" + s.message() + ")");
    return s;
  }
  if (!*next) return Status::Corrupt(name + " is empty: not an oans plan");
  Status st;
  KJ_IF_MAYBE(exc, kj::runCatchingExceptions([&]() {
    capnp::FlatArrayMessageReader reader(words, FrameReader::Options(words.size()));
    auto frame = reader.getRoot<schema::PlanFrame>();
    if (frame.which() != schema::PlanFrame::HEADER) {
      st = Status::Corrupt(name + " is not an oans plan (no header)");
      return;
    }
    auto h = frame.getHeader();
    std::string magic = h.getMagic();
    if (magic != kPlanMagic) {
      st = Status::Corrupt(name + (magic == "oans-index" ? " is an extent index, not a plan; make a plan with oans-plan"
                                                         : " is not an oans plan (wrong magic)"));
      return;
    }
    if (h.getFormatVersion() > kPlanFormatVersion) {
      st = Status::Version(name + " has plan format version " + std::to_string(h.getFormatVersion()) +
                           ", newer than this oans understands (" + std::to_string(kPlanFormatVersion) +
                           "); upgrade oans or re-plan");
      return;
    }
    PlanHeader& ph = p->header_;
    ph.format_version = h.getFormatVersion();
    ph.tool_version = h.getToolVersion();
    ph.created_ns = h.getCreatedNs();
    for (auto r : h.getRoots()) ph.roots.push_back(FromData(r));
    for (auto f : h.getFilesystems()) ph.filesystems.push_back(schema_io::ReadFs(f));
    ph.round_size = h.getRoundSize();
    ph.block_size = h.getBlockSize();
    for (auto i : h.getIndexes()) ph.indexes.push_back(i);
    for (auto c : h.getCommandLine()) ph.command_line.push_back(c);
    ph.rounds = h.getRounds();
    ph.groups = h.getGroups();
    ph.duplicate_bytes = h.getDuplicateBytes();
    ph.shared_bytes = h.getSharedBytes();
    ph.planned_bytes = h.getPlannedBytes();
    ph.rewrite_bytes = h.getRewriteBytes();
    if (h.getStorage() == schema::Storage::HDD) ph.storage = StorageKind::kHdd;
    if (h.getStorage() == schema::Storage::SSD) ph.storage = StorageKind::kSsd;
  })) {
    return Status::Corrupt(name + " is damaged (" + std::string(exc->getDescription().cStr()) + ")");
  }
  if (!st.ok()) return st;
  return p;
}

Result<bool> PlanReader::Next(PlanRound* round) {
  const std::string& name = in_->name();
  if (done_) return false;
  kj::Array<capnp::word> words;
  auto next = frames_->Next(&words);
  if (!next.ok()) return next.status();
  if (!*next)
    return Status::Corrupt(name + " is truncated (no trailer after " + std::to_string(rounds_) +
                           " rounds): the oans-plan that wrote it did not finish; make the plan again");
  Status st;
  bool more = false;
  KJ_IF_MAYBE(exc, kj::runCatchingExceptions([&]() {
    capnp::FlatArrayMessageReader reader(words, FrameReader::Options(words.size()));
    auto frame = reader.getRoot<schema::PlanFrame>();
    switch (frame.which()) {
      case schema::PlanFrame::ROUND: {
        st = DecodeRound(frame.getRound(), name, rounds_, header_.filesystems.size(), header_.format_version, round);
        if (!st.ok()) return;
        ops_ += round->ops.size();
        rounds_++;
        more = true;
        return;
      }
      case schema::PlanFrame::TRAILER: {
        auto t = frame.getTrailer();
        if (t.getBatches() != rounds_ || t.getRecords() != ops_) {
          st = Status::Corrupt(name + " is damaged: its trailer counts " + std::to_string(t.getBatches()) +
                               " rounds but " + std::to_string(rounds_) + " were read");
          return;
        }
        done_ = true;
        return;
      }
      default:
        st = Status::Corrupt(name + " is damaged (unexpected message in the plan body)");
    }
  })) {
    return Status::Corrupt(name + " is damaged (" + std::string(exc->getDescription().cStr()) + ")");
  }
  if (!st.ok()) return st;
  if (done_) {
    // The trailer must end the stream: anything after it (a second plan, a cut frame) is damage.
    kj::Array<capnp::word> rest;
    auto after = frames_->Next(&rest);
    if (!after.ok()) return after.status();
    if (*after) return Status::Corrupt(name + " is damaged (data after the trailer)");
  }
  return more;
}

Status ValidatePlan(const std::string& path, const std::function<void(const PlanRound&)>& each) {
  auto p = PlanReader::Open(path);
  if (!p.ok()) return p.status();
  PlanRound round;
  uint64_t rounds = 0;
  for (;;) {
    auto more = (*p)->Next(&round);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (each) each(round);
    rounds++;
  }
  if (rounds != (*p)->header().rounds)
    return Status::Corrupt((*p)->name() + " is damaged: its header announces " + std::to_string((*p)->header().rounds) +
                           " rounds but it holds " + std::to_string(rounds));
  return Status::Ok();
}

}  // namespace oans
