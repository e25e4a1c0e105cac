// ReadIndexTail: the records of an index from an offset its header names on, read
// without the frames before it.
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "format/index.capnp.h"
#include "lib/format/index_file.h"
#include "lib/format/index_record.h"

namespace oans {
namespace {

// Calls f with the message of `words`, the frame FrameReader `frames` read last; a
// message that does not parse is damage at that frame.
template <typename F>
Status InFrame(kj::Array<capnp::word>& words, const FrameReader& frames, const F& f) {
  Status st;
  KJ_IF_MAYBE(exc, kj::runCatchingExceptions([&]() {
    capnp::FlatArrayMessageReader reader(words, FrameReader::Options(words.size()));
    st = f(reader.getRoot<schema::IndexFrame>());
  })) {
    return frames.DamagedAt(frames.offset(),
                            "holds a message that does not parse (" + std::string(exc->getDescription().cStr()) + ")");
  }
  return st;
}

// The next message of `frames`, which must be there.
Status NextFrame(FrameReader& frames, kj::Array<capnp::word>* words) {
  auto got = frames.Next(words);
  if (!got.ok()) return got.status();
  if (!*got)
    return Status::Corrupt(frames.name() + " is truncated (no trailer): the scan that wrote it did not finish; "
                           "re-run oans-scan");
  return Status::Ok();
}

}  // namespace

Status ReadIndexTail(const std::string& path, uint64_t at, const std::function<Status(const IndexHeader&)>& on_header,
                     const std::function<Status(const IndexHeader&, std::vector<FileEntry>&)>& on_batch,
                     bool* more) {
  *more = false;
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  const int fd = (*in)->fd();
  const std::string& name = (*in)->name();
  IndexHeader header;
  uint64_t from = 0;
  {
    FrameReader frames(fd, name);
    kj::Array<capnp::word> words;
    OANS_RETURN_IF_ERROR(NextFrame(frames, &words));
    OANS_RETURN_IF_ERROR(InFrame(words, frames, [&](schema::IndexFrame::Reader f) {
      if (f.which() != schema::IndexFrame::HEADER) return Status::Corrupt(name + " is not an oans index (no header)");
      return DecodeHeader(f.getHeader(), name, &header);
    }));
    from = frames.end_offset() + at;
    if (from < at || from > uint64_t(INT64_MAX))
      return Status::Corrupt(name + " is damaged (its header names an offset past any file)");
  }
  OANS_RETURN_IF_ERROR(on_header(header));
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::Io("reading " + name, errno);
  if (S_ISREG(st.st_mode) && from >= uint64_t(st.st_size))
    return Status::Corrupt(name + " is damaged (its header names an offset past its end)");
  if (lseek(fd, off_t(from), SEEK_SET) != off_t(from)) return Status::Io("seeking in " + name, errno);
  FrameReader frames(fd, name, from);
  std::vector<FileEntry> batch;
  IndexTotals seen;
  for (bool trailer = false; !trailer;) {
    kj::Array<capnp::word> words;
    OANS_RETURN_IF_ERROR(NextFrame(frames, &words));
    OANS_RETURN_IF_ERROR(InFrame(words, frames, [&](schema::IndexFrame::Reader f) -> Status {
      if (f.which() == schema::IndexFrame::BATCH) {
        Status decoded = DecodeBatch(f.getBatch(), name, header, &batch, &seen);
        if (decoded.code() == Status::Code::kCorrupt)
          return Status::Corrupt(decoded.message() + "; the bad frame starts at byte " + std::to_string(frames.offset()));
        OANS_RETURN_IF_ERROR(decoded);
        return on_batch(header, batch);
      }
      if (f.which() == schema::IndexFrame::TRAILER && f.getTrailer().getRecords() >= seen.records) {
        trailer = true;
        return Status::Ok();
      }
      return frames.DamagedAt(frames.offset(), "is not where its header says the changed records are");
    }));
  }
  kj::Array<capnp::word> words;
  auto next = frames.Next(&words);
  *more = next.ok() && *next;
  return Status::Ok();
}

}  // namespace oans
