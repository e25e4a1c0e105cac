#include "lib/scan/moved_files.h"

#include <algorithm>

#include "lib/base/extent_code.h"

namespace oans {

void MovedFiles::Add(uint64_t ino, uint32_t inode_flags, std::span<const FiemapExtent> extents) {
  encoded_.clear();
  PutVarint(&encoded_, inode_flags);
  PutExtents(&encoded_, extents);
  // A chunk is never grown past what it reserved: its bytes stay where they are.
  if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < encoded_.size()) {
    chunks_.emplace_back();
    chunks_.back().reserve(std::max(kChunkBytes, encoded_.size()));
  }
  std::string& chunk = chunks_.back();
  entries_.push_back({ino, uint32_t(chunks_.size() - 1), uint32_t(chunk.size())});
  chunk += encoded_;
}

void MovedFiles::Sort() {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.ino < b.ino; });
  std::string().swap(encoded_);
}

const MovedFiles::Entry* MovedFiles::Lookup(uint64_t ino) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), ino, [](const Entry& e, uint64_t i) { return e.ino < i; });
  return it == entries_.end() || it->ino != ino ? nullptr : &*it;
}

uint64_t MovedFiles::bytes() const {
  uint64_t n = entries_.size() * sizeof(Entry);
  for (const auto& c : chunks_) n += c.capacity();
  return n;
}

bool MovedFiles::Has(uint64_t ino) const { return Lookup(ino) != nullptr; }

std::optional<MovedExtents> MovedFiles::Find(uint64_t ino) const {
  const Entry* e = Lookup(ino);
  if (!e) return std::nullopt;
  CodeReader r(std::string_view(chunks_[e->chunk]).substr(e->at));
  MovedExtents m;
  m.inode_flags = r.Varint32();
  r.Extents(&m.extents);
  return m;  // written by Add from memory: it reads back whole
}

}  // namespace oans
