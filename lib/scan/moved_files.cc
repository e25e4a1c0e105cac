#include "lib/scan/moved_files.h"

#include <algorithm>

#include "lib/base/extent_code.h"

namespace oans {

void MovedFiles::Encode(uint32_t inode_flags, std::span<const FiemapExtent> extents, std::string* out) {
  out->clear();
  PutVarint(out, inode_flags);
  PutExtents(out, extents);
}

void MovedFiles::Add(uint64_t ino, std::string_view encoded) {
  if (encoded.size() > kChunkBytes) {  // a chunk of its own
    chunks_.emplace_back(encoded);
    entries_.push_back({ino, uint32_t(chunks_.size() - 1), 0});
    return;
  }
  // A chunk is never grown past what it reserved: its pages are written once, in order.
  if (filling_ == SIZE_MAX || chunks_[filling_].capacity() - chunks_[filling_].size() < encoded.size()) {
    chunks_.emplace_back();
    chunks_.back().reserve(kChunkBytes);
    filling_ = chunks_.size() - 1;
  }
  std::string& chunk = chunks_[filling_];
  entries_.push_back({ino, uint32_t(filling_), uint32_t(chunk.size())});
  chunk.append(encoded);
}

void MovedFiles::Sort() {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.ino < b.ino; });
}

uint64_t MovedFiles::bytes() const {
  uint64_t n = entries_.size() * sizeof(Entry);
  for (const auto& c : chunks_) n += c.size();
  return n;
}

const MovedFiles::Entry* MovedFiles::Lookup(uint64_t ino) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), ino, [](const Entry& e, uint64_t i) { return e.ino < i; });
  return it == entries_.end() || it->ino != ino ? nullptr : &*it;
}

bool MovedFiles::Has(uint64_t ino) const { return Lookup(ino) != nullptr; }

std::optional<MovedExtents> MovedFiles::Find(uint64_t ino) const {
  const Entry* e = Lookup(ino);
  if (!e) return std::nullopt;
  CodeReader r(std::string_view(chunks_[e->chunk]).substr(e->at));
  MovedExtents m;
  m.inode_flags = r.Varint32();
  r.Extents(&m.extents);
  m.damaged = !r.ok();  // written by Add in memory, it reads back whole
  return m;
}

}  // namespace oans
