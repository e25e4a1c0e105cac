// Bounded memory for work that grows with the number of files: an unnamed temporary
// file, a store of variable-length records that moves to that file past a memory budget,
// and an external sorter of fixed-size records (sorted runs spilled to a temporary file,
// then merged). Temporary files are created unlinked (O_TMPFILE, or unlinked right after
// mkstemp), so they disappear on exit, on error and on a crash alike.
#pragma once

#include <algorithm>
#include <bit>
#include <compare>
#include <iterator>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/base/status.h"

namespace oans {

// Directory for temporary files: `preferred` if set, else $TMPDIR, else /var/tmp.
std::string TempDirectory(const std::string& preferred = "");

class TempFile {
 public:
  static Result<std::unique_ptr<TempFile>> Create(const std::string& dir);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  // Appends; returns the offset the data was written at.
  Result<uint64_t> Append(const void* data, size_t n);
  Status ReadAt(uint64_t offset, void* data, size_t n) const;
  uint64_t size() const { return size_; }
  const std::string& dir() const { return dir_; }
  // For writers that write the descriptor directly (size() then counts only Append).
  int fd() const { return fd_; }

 private:
  TempFile(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  int fd_;
  std::string dir_;
  uint64_t size_ = 0;
};

// Variable-length records addressed by the offset Add returns, laid out as one byte
// stream. The stream is kept in fixed-size chunks in memory until `memory_budget` bytes
// are held; then every full chunk goes to a temporary file and only the chunk being
// filled stays in memory.
class RecordStore {
 public:
  RecordStore(std::string temp_dir, uint64_t memory_budget) : dir_(std::move(temp_dir)), budget_(memory_budget) {}
  Result<uint64_t> Add(const std::string& record);
  Status Get(uint64_t offset, std::string* record) const;
  // Visits every record in the order added, reading the file sequentially in large
  // pieces (the cheap way to fetch many records: no read per record).
  Status ForEach(const std::function<Status(uint64_t offset, const std::string& record)>& visit) const;
  bool spilled() const { return file_ != nullptr; }
  uint64_t bytes() const { return end_; }

 private:
  static constexpr size_t kChunk = 64u << 10;
  void Append(const char* p, size_t n);
  Status Read(uint64_t offset, char* p, size_t n) const;
  Status Spill();
  std::string dir_;
  uint64_t budget_;
  std::unique_ptr<TempFile> file_;     // the stream's first file_->size() bytes, once spilled
  std::vector<std::unique_ptr<char[]>> chunks_;  // the rest, from mem_base_ on
  uint64_t mem_base_ = 0, end_ = 0;
};

// Memory for ChunkedArray: whole pages mapped for it alone, so only the pages records
// touch count, and a freed chunk goes straight back to the system instead of staying
// in the heap.
void* MapChunk(size_t bytes);
void UnmapChunk(void* p, size_t bytes);

// Fixed-size records in chunks of about 1 MiB, mapped as records come: no doubling and
// copying as it grows, and a sequential consumer can give each chunk back once it has
// passed it (release). Indexable and sortable through its random-access iterator.
template <typename T>
class ChunkedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr size_t kShift = std::bit_width(std::max<size_t>(1, (1u << 20) / sizeof(T))) - 1;
  static constexpr size_t kPerChunk = size_t(1) << kShift;

  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    Iterator() = default;
    Iterator(T* const* chunks, size_t i) : chunks_(chunks), i_(i) {}
    T& operator*() const { return chunks_[i_ >> kShift][i_ & (kPerChunk - 1)]; }
    T* operator->() const { return &**this; }
    T& operator[](difference_type n) const { return *(*this + n); }
    Iterator& operator++() { ++i_; return *this; }
    Iterator operator++(int) { Iterator t = *this; ++i_; return t; }
    Iterator& operator--() { --i_; return *this; }
    Iterator operator--(int) { Iterator t = *this; --i_; return t; }
    Iterator& operator+=(difference_type n) { i_ = size_t(difference_type(i_) + n); return *this; }
    Iterator& operator-=(difference_type n) { i_ = size_t(difference_type(i_) - n); return *this; }
    friend Iterator operator+(Iterator a, difference_type n) { return a += n; }
    friend Iterator operator+(difference_type n, Iterator a) { return a += n; }
    friend Iterator operator-(Iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return difference_type(a.i_) - difference_type(b.i_);
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.i_ <=> b.i_; }

   private:
    T* const* chunks_ = nullptr;
    size_t i_ = 0;
  };

  ChunkedArray() = default;
  ChunkedArray(ChunkedArray&& o) noexcept { *this = std::move(o); }
  ChunkedArray& operator=(ChunkedArray&& o) noexcept {
    clear();
    chunks_ = std::move(o.chunks_);
    size_ = o.size_;
    o.chunks_.clear();
    o.size_ = 0;
    return *this;
  }
  ~ChunkedArray() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void push_back(const T& v) {
    if ((size_ >> kShift) == chunks_.size()) chunks_.push_back(static_cast<T*>(MapChunk(kPerChunk * sizeof(T))));
    chunks_[size_ >> kShift][size_ & (kPerChunk - 1)] = v;
    size_++;
  }
  T& operator[](size_t i) { return chunks_[i >> kShift][i & (kPerChunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> kShift][i & (kPerChunk - 1)]; }
  Iterator begin() { return Iterator(chunks_.data(), 0); }
  Iterator end() { return Iterator(chunks_.data(), size_); }
  // Records [i, i + n) lie in one chunk when i is a multiple of kPerChunk and n <= kPerChunk.
  const T* chunk(size_t c) const { return chunks_[c]; }
  size_t chunks() const { return chunks_.size(); }
  // Frees chunk c (whose records are no longer needed); indexing it afterwards is an error.
  void release(size_t c) {
    UnmapChunk(chunks_[c], kPerChunk * sizeof(T));
    chunks_[c] = nullptr;
  }
  void clear() {
    for (T* c : chunks_) UnmapChunk(c, kPerChunk * sizeof(T));
    std::vector<T*>().swap(chunks_);
    size_ = 0;
  }

 private:
  std::vector<T*> chunks_;
  size_t size_ = 0;
};

// Variable-length runs of T (a file's extents, its block hashes) appended one after
// another in blocks of 16384 elements, so nothing is copied as the store grows; a run
// never straddles two blocks (a longer one gets a block of its own), so Get gives a
// pointer to the whole run.
template <typename T>
class RunStore {
 public:
  // Returns where the run starts, for Get.
  uint64_t Append(const std::vector<T>& run) {
    if (blocks_.empty() || blocks_.back().capacity() - blocks_.back().size() < run.size()) {
      blocks_.emplace_back();
      blocks_.back().reserve(std::max(kBlock, run.size()));
    }
    const uint64_t at = (uint64_t(blocks_.size() - 1) << 32) | blocks_.back().size();
    blocks_.back().insert(blocks_.back().end(), run.begin(), run.end());
    return at;
  }
  const T* Get(uint64_t at) const { return blocks_[at >> 32].data() + (at & 0xffffffffu); }

 private:
  static constexpr size_t kBlock = 16384;
  std::vector<std::vector<T>> blocks_;
};

// Sorts fixed-size records in at most `memory_budget` bytes. Add() them, then ForEach()
// visits them in order (as often as needed), or Drain() visits them once, giving the
// memory back as it goes. `Less` is a strict weak ordering; records comparing equal come
// out in no particular order.
template <typename T, typename Less>
class ExternalSorter {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to disk as bytes");

 public:
  ExternalSorter(std::string temp_dir, uint64_t memory_budget, Less less = Less())
      : dir_(std::move(temp_dir)),
        capacity_(std::max<size_t>(1024, size_t(memory_budget / sizeof(T)))),
        less_(less) {}

  Status Add(const T& record) {
    buffer_.push_back(record);
    count_++;
    if (buffer_.size() >= capacity_) return SpillRun();
    return Status::Ok();
  }

  uint64_t size() const { return count_; }
  size_t runs() const { return runs_.size(); }

  // Visits every record in order; a non-OK status from `visit` stops the walk.
  Status ForEach(const std::function<Status(const T&)>& visit) { return Visit(visit, false); }

  // Like ForEach, once: memory (and the temporary file) is released as the records are
  // visited, and the sorter is empty afterwards, whatever `visit` returns.
  Status Drain(const std::function<Status(const T&)>& visit) {
    Status s = Visit(visit, true);
    buffer_.clear();
    runs_.clear();
    file_.reset();
    count_ = 0;
    sorted_ = false;
    return s;
  }

 private:
  struct Run {
    uint64_t offset, count;
  };

  Status Visit(const std::function<Status(const T&)>& visit, bool release) {
    if (!sorted_) {
      if (!runs_.empty() && !buffer_.empty()) OANS_RETURN_IF_ERROR(SpillRun());
      if (runs_.empty()) std::sort(buffer_.begin(), buffer_.end(), less_);
      sorted_ = true;
    }
    if (!runs_.empty()) return Merge(visit);
    for (size_t c = 0; c < buffer_.chunks(); ++c) {
      const T* p = buffer_.chunk(c);
      const size_t n = std::min(buffer_.kPerChunk, buffer_.size() - c * buffer_.kPerChunk);
      for (size_t i = 0; i < n; ++i) OANS_RETURN_IF_ERROR(visit(p[i]));
      if (release) buffer_.release(c);
    }
    return Status::Ok();
  }

  Status SpillRun() {
    if (buffer_.empty()) return Status::Ok();
    std::sort(buffer_.begin(), buffer_.end(), less_);
    if (!file_) {
      OANS_ASSIGN_OR_RETURN(file_, TempFile::Create(dir_));
    }
    const uint64_t at = file_->size();
    for (size_t c = 0; c < buffer_.chunks(); ++c) {
      const size_t n = std::min(buffer_.kPerChunk, buffer_.size() - c * buffer_.kPerChunk);
      OANS_RETURN_IF_ERROR(file_->Append(buffer_.chunk(c), n * sizeof(T)).status());
    }
    runs_.push_back({at, buffer_.size()});
    buffer_.clear();
    return Status::Ok();
  }

  // k-way merge; each run is read through its own buffer, together within the budget.
  Status Merge(const std::function<Status(const T&)>& visit) {
    buffer_.clear();
    const size_t per_run = std::max<size_t>(64, capacity_ / (runs_.size() + 1));
    struct Cursor {
      Run run;
      uint64_t next = 0;  // records consumed from the file
      std::vector<T> buf;
      size_t pos = 0;
    };
    std::vector<Cursor> cursors(runs_.size());
    auto fill = [&](Cursor& c) -> Status {
      uint64_t n = std::min<uint64_t>(per_run, c.run.count - c.next);
      c.buf.resize(n);
      c.pos = 0;
      if (n == 0) return Status::Ok();
      OANS_RETURN_IF_ERROR(file_->ReadAt(c.run.offset + c.next * sizeof(T), c.buf.data(), n * sizeof(T)));
      c.next += n;
      return Status::Ok();
    };
    auto greater = [&](size_t a, size_t b) {
      return less_(cursors[b].buf[cursors[b].pos], cursors[a].buf[cursors[a].pos]);
    };
    std::priority_queue<size_t, std::vector<size_t>, decltype(greater)> heap(greater);
    for (size_t i = 0; i < runs_.size(); ++i) {
      cursors[i].run = runs_[i];
      OANS_RETURN_IF_ERROR(fill(cursors[i]));
      if (!cursors[i].buf.empty()) heap.push(i);
    }
    while (!heap.empty()) {
      size_t i = heap.top();
      heap.pop();
      Cursor& c = cursors[i];
      OANS_RETURN_IF_ERROR(visit(c.buf[c.pos]));
      if (++c.pos == c.buf.size()) OANS_RETURN_IF_ERROR(fill(c));
      if (c.pos < c.buf.size()) heap.push(i);
    }
    return Status::Ok();
  }

  std::string dir_;
  size_t capacity_;
  Less less_;
  ChunkedArray<T> buffer_;
  std::vector<Run> runs_;
  std::unique_ptr<TempFile> file_;
  uint64_t count_ = 0;
  bool sorted_ = false;
};

}  // namespace oans
