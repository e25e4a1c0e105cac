// Files whose extents alone changed since the previous index (a dedupe moved their
// data): each one's new extents and inode flags, by inode number, for the record carried
// with them. A dedupe of a million files moves as many, so they are held compactly:
// 16 bytes a file (its number and where its entry starts), then the entry, its flags and
// extents as lib/base/extent_code.h writes them (about 12 bytes for one extent), in
// chunks of 1 MiB.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file_sys.h"

namespace oans {

// A file whose extents alone changed: its new extents and flags.
struct MovedExtents {
  uint32_t inode_flags = 0;
  std::vector<FiemapExtent> extents;
  bool damaged = false;  // its entry did not read back whole (no extents then)
};

class MovedFiles {
 public:
  // A file's entry, encoded into *out (which it replaces); then Add it. Encoding needs
  // no lock: Add is the only part that must be called by one thread at a time.
  static void Encode(uint32_t inode_flags, std::span<const FiemapExtent> extents, std::string* out);
  void Add(uint64_t ino, std::string_view encoded);
  // After the last Add, before Has and Find.
  void Sort();
  bool Has(uint64_t ino) const;
  std::optional<MovedExtents> Find(uint64_t ino) const;
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // The memory their entries take (chunks counted as far as written).
  uint64_t bytes() const;

  // The chunks being 1 MiB, each is mapped on its own (base/heap.h), and only the
  // pages written count: so does bytes().
  static constexpr size_t kChunkBytes = 1 << 20;
  size_t chunks() const { return chunks_.size(); }

 private:
  struct Entry {
    uint64_t ino;
    uint32_t chunk, at;  // the entry's first byte: chunks_[chunk][at]
  };
  const Entry* Lookup(uint64_t ino) const;
  // A deque: as a million files move, the list grows in blocks, never copied whole into
  // one twice its size.
  std::deque<Entry> entries_;
  // An entry never spans two chunks; one longer than a chunk has a chunk of its own,
  // and the chunk being filled stays the one it was.
  std::vector<std::string> chunks_;
  size_t filling_ = SIZE_MAX;  // the chunk being filled
};

}  // namespace oans
