#include "lib/scan/quiet.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>

namespace oans {
namespace {

// A digest of 64-bit words, each hashed with the digest so far as its seed; never 0,
// which stands for none.
class Digest {
 public:
  void Add(uint64_t v) { h_ = XXH3_64bits_withSeed(&v, sizeof v, h_); }
  uint64_t Value() const { return h_ | 1; }

 private:
  uint64_t h_ = 0;
};

uint64_t StatDigest(uint64_t size, int64_t mtime_ns, int64_t ctime_ns, uint32_t nlink, uint32_t uid, uint32_t gid,
                    uint32_t inode_flags) {
  Digest d;
  for (uint64_t v : {size, uint64_t(mtime_ns), uint64_t(ctime_ns), uint64_t(nlink), uint64_t(uid), uint64_t(gid),
                     uint64_t(inode_flags)})
    d.Add(v);
  return d.Value();
}

uint64_t ExtentsDigest(const std::vector<FiemapExtent>& x) {
  Digest d;
  d.Add(x.size());
  // Whether another file shares an extent is no part of the file's own state.
  for (const auto& e : x)
    for (uint64_t v : {e.logical, e.physical, e.length, uint64_t(e.flags & ~kExtentShared)}) d.Add(v);
  return d.Value();
}

// A directory's: tagged, so that no file's digest equals it.
uint64_t DirDigest(int64_t mtime_ns, int64_t ctime_ns) {
  Digest d;
  for (uint64_t v : {uint64_t(S_IFDIR), uint64_t(mtime_ns), uint64_t(ctime_ns)}) d.Add(v);
  return d.Value();
}

}  // namespace

QuietDigest QuietDigest::Of(const IndexDir& d) {
  if (d.ino == 0 || d.ctime_ns == 0) return {};
  return {DirDigest(d.mtime_ns, d.ctime_ns), 0};
}

QuietDigest QuietDigest::Of(const FileEntry& e) {
  if (!e.hashed || !e.error.empty() || e.ino == 0 || e.extents.empty()) return {};
  return {StatDigest(e.size, e.mtime_ns, e.ctime_ns, e.nlink, e.uid, e.gid, e.inode_flags), ExtentsDigest(e.extents)};
}

QuietDigest QuietDigest::Of(const ChangedInode& c) {
  if (c.exists && S_ISDIR(c.item.mode)) return {DirDigest(c.item.mtime_ns, c.item.ctime_ns), 0};
  if (!c.exists || !S_ISREG(c.item.mode) || !c.mapped || c.map.extents.empty()) return {};
  const FileStat st = c.map.Stat(0);
  return {StatDigest(st.size, st.mtime_ns, st.ctime_ns, st.nlink, st.uid, st.gid, c.map.inode_flags),
          ExtentsDigest(c.map.extents)};
}

void QuietRecords::Want(uint32_t fs) { wanted_.push_back({fs, {}, {}}); }

QuietRecords::Wanted* QuietRecords::Of(uint32_t fs) {
  for (auto& w : wanted_)
    if (w.fs == fs) return &w;
  return nullptr;
}

const QuietRecords::Wanted* QuietRecords::Of(uint32_t fs) const {
  return const_cast<QuietRecords*>(this)->Of(fs);
}

uint64_t QuietRecords::QuarterCut(size_t n) {
  // One filesystem, the usual case: its records are put in place around the cut (they
  // are sorted after Load anyway). Several: their numbers are copied, 8 bytes a record.
  if (wanted_.size() == 1) {
    auto& v = wanted_[0].records;
    auto at = v.begin() + long(v.size() * 3 / 4);
    std::nth_element(v.begin(), at, v.end(), [](const Record& a, const Record& b) { return a.ino < b.ino; });
    return at->ino;
  }
  std::vector<uint64_t> inos;
  inos.reserve(n);
  for (const auto& w : wanted_)
    for (const auto& r : w.records) inos.push_back(r.ino);
  auto at = inos.begin() + long(inos.size() * 3 / 4);
  std::nth_element(inos.begin(), at, inos.end());
  return *at;
}

bool QuietRecords::DropHighest(uint64_t* upto) {
  size_t n = 0;
  for (const auto& w : wanted_) n += w.records.size();
  if (n == 0) return true;
  // A quarter dropped: an index in inode order (as a walk writes it) fills three
  // quarters of the room a pass.
  uint64_t cut = QuarterCut(n);
  auto none = [&](auto pred) {
    return std::all_of(wanted_.begin(), wanted_.end(),
                       [&](const Wanted& w) { return std::none_of(w.records.begin(), w.records.end(), pred); });
  };
  // Three quarters of them or more of the lowest number: that number's records are kept
  // alone, and no higher number is taken in again.
  if (none([cut](const Record& r) { return r.ino < cut; })) {
    if (cut == UINT64_MAX || none([cut](const Record& r) { return r.ino != cut; })) return false;
    cut++;
  }
  for (auto& w : wanted_) std::erase_if(w.records, [cut](const Record& r) { return r.ino >= cut; });
  *upto = cut;
  return true;
}

Status QuietRecords::Load(const std::string& path, int64_t created_ns, uint64_t most, uint64_t from, uint64_t* upto) {
  for (auto& w : wanted_) std::vector<Record>().swap(w.records);
  *upto = UINT64_MAX;
  // Each record kept costs its 24 bytes, and with several filesystems 8 more while the
  // highest are dropped (QuarterCut).
  const size_t room = std::max<size_t>(4, most / (sizeof(Record) + (wanted_.size() > 1 ? sizeof(uint64_t) : 0)));
  // One filesystem (the usual case) holds the room without growing past it.
  if (wanted_.size() == 1) wanted_[0].records.reserve(room + 1);
  size_t kept = 0;
  bool one_number = false;
  uint64_t last = 0;
  // Whether record (fs, ino) is in this pass; `digest` gives its digest when it is.
  auto keep = [&](uint32_t fs, uint64_t ino, const auto& digest) {
    Wanted* w = Of(fs);
    if (!w || ino < from || ino >= *upto || one_number) return;
    w->records.push_back({ino, digest()});
    last = ino;
    if (++kept <= room) return;
    one_number = !DropHighest(upto);
    kept = 0;
    for (const auto& x : wanted_) kept += x.records.size();
  };
  // A record without a digest, or racy, is kept without one: it is looked at, and still
  // counts when the inode has two records. Directory records come first, decoded.
  IndexReadOptions ro;
  ro.on_dirs = [&](const IndexHeader&, std::vector<IndexDir>& dirs) {
    for (const auto& d : dirs)
      keep(d.fs, d.ino, [&] { return Settled(d, created_ns) ? QuietDigest::Of(d) : QuietDigest{}; });
    return one_number ? Status::Corrupt("") : Status::Ok();
  };
  // Each batch of files is looked at as it is encoded (checked, not decoded): only the
  // stat and extents of its records are read.
  FileEntry e;
  ro.keep_encoded = [&](const IndexHeader&, const BatchView& batch) {
    for (size_t i = 0; i < batch.size(); ++i)
      keep(batch.fs(i), batch.ino(i), [&] {
        batch.StatOf(i, &e);
        return Settled(e, created_ns) ? QuietDigest::Of(e) : QuietDigest{};
      });
    return true;
  };
  // Stops the reading once one number's records fill the room.
  ro.on_encoded = [&](const IndexHeader&, const IndexTotals&) {
    return one_number ? Status::Corrupt("") : Status::Ok();
  };
  auto r = ReadIndex(
      path, ro,
      [&](const IndexHeader& h) {
        return h.created_ns == created_ns ? Status::Ok() : Status::Invalid("the previous index changed while it was read");
      },
      [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
  if (one_number)
    return Status::Corrupt("more records of inode " + std::to_string(last) + " than --memory holds");
  if (!r.ok()) return r.status();
  for (auto& w : wanted_)
    std::sort(w.records.begin(), w.records.end(), [](const Record& a, const Record& b) { return a.ino < b.ino; });
  return Status::Ok();
}

bool QuietRecords::Take(uint32_t fs, ChangedInode& c) {
  Wanted* w = Of(fs);
  if (!w || w->records.empty()) return false;
  auto it = std::lower_bound(w->records.begin(), w->records.end(), c.ino,
                             [](const Record& r, uint64_t i) { return r.ino < i; });
  // Two records of one inode (a damaged index) say nothing certain of it.
  if (it == w->records.end() || it->ino != c.ino || (it + 1 != w->records.end() && (it + 1)->ino == c.ino))
    return false;
  const QuietDigest now = QuietDigest::Of(c);
  if (it->digest.stat == 0 || now.stat == 0 || now.stat != it->digest.stat) return false;
  if (now.extents == it->digest.extents) return true;
  if (S_ISDIR(c.item.mode)) return false;
  AddMoved(w, c);
  return true;
}

void QuietRecords::AddMoved(Wanted* w, const ChangedInode& c) {
  thread_local std::string encoded;
  MovedFiles::Encode(c.map.inode_flags, c.map.extents, &encoded);
  {
    std::lock_guard<std::mutex> lock(moved_mu_);
    w->moved.Add(c.ino, encoded);
  }
  if (encoded.capacity() > (64 << 10)) std::string().swap(encoded);  // a file of many extents
}

std::vector<uint64_t> QuietRecords::Splits(uint32_t fs, size_t parts, uint64_t from, uint64_t upto) const {
  std::vector<uint64_t> cuts;
  const Wanted* w = Of(fs);
  if (!w || parts < 2) return cuts;
  // No slice of fewer than this many records: a thread costs more than it saves.
  constexpr size_t kLeast = 4096;
  auto below = [](const Record& r, uint64_t i) { return r.ino < i; };
  const auto first = std::lower_bound(w->records.begin(), w->records.end(), from, below);
  const auto end = std::lower_bound(first, w->records.end(), upto, below);
  const size_t n = size_t(end - first);
  parts = std::min(parts, n / kLeast);
  for (size_t k = 1; k < parts; ++k) {
    const uint64_t at = first[n * k / parts].ino;
    if (cuts.empty() || at > cuts.back()) cuts.push_back(at);
  }
  return cuts;
}

void QuietRecords::Done() {
  for (auto& w : wanted_) {
    std::vector<Record>().swap(w.records);
    w.moved.Sort();
  }
}

std::optional<MovedExtents> QuietRecords::Moved(uint32_t fs, uint64_t ino) const {
  const Wanted* w = Of(fs);
  return w ? w->moved.Find(ino) : std::nullopt;
}

uint64_t QuietRecords::moved() const {
  uint64_t n = 0;
  for (const auto& w : wanted_) n += w.moved.size();
  return n;
}

uint64_t QuietRecords::PassRoom(uint64_t share) const {
  uint64_t moved = 0;
  for (const auto& w : wanted_) moved += w.moved.bytes();
  return std::max(share / 4, moved < share ? share - moved : 0);
}

bool QuietRecords::IsMoved(uint32_t fs, uint64_t ino) const {
  const Wanted* w = Of(fs);
  return w && w->moved.Has(ino);
}

}  // namespace oans
