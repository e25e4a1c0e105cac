// Bounded memory for work that grows with the number of files: an unnamed temporary
// file, a store of variable-length records that moves to that file past a memory budget,
// and an external sorter of fixed-size records (sorted runs spilled to a temporary file,
// then merged). Temporary files are created unlinked (O_TMPFILE, or unlinked right after
// mkstemp), so they disappear on exit, on error and on a crash alike. The sorter and the
// record store hand out their contents as streams (lib/base/stream.h).
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
#include "lib/base/stream.h"

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
  // The record `skip` records after the one at `offset`.
  // Reads the length prefixes on the way through one window.
  Status GetAfter(uint64_t offset, uint32_t skip, std::string* record) const;
  // A new budget; a smaller one spills at the next Add.
  void set_budget(uint64_t memory_budget) { budget_ = memory_budget; }
  // A stream of every record in the order added, reading the file sequentially in large
  // pieces (the cheap way to fetch many records: no read per record); offset() is where
  // the current record is. The store must outlive it and not grow meanwhile.
  class Reader : public Stream<std::string> {
   public:
    explicit Reader(const RecordStore* store) : store_(store) { Next(); }
    bool Valid() const override { return valid_; }
    const std::string& key() const override { return record_; }
    uint64_t offset() const { return at_; }
    void Next() override;
    Status status() const override { return status_; }

   private:
    Status Have(uint64_t at, size_t n);  // makes [at, at + n) available in window_
    const RecordStore* store_;
    std::string window_, record_;  // window_: bytes of the store from window_at_ on
    uint64_t window_at_ = 0, pos_ = 0, at_ = 0;
    bool valid_ = false;
    Status status_;
  };
  Reader Records() const { return Reader(this); }
  // Visits every record in the order added, through a Reader.
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

// A stream of the records of a ChunkedArray from its start. Reading an array it owns, it
// gives each chunk back as soon as it has passed it.
template <typename T>
class ChunkStream : public Stream<T> {
 public:
  explicit ChunkStream(const ChunkedArray<T>* records) : records_(records) {}
  explicit ChunkStream(ChunkedArray<T>&& owned) : owned_(std::move(owned)), records_(&owned_), release_(true) {}
  bool Valid() const override { return i_ < records_->size(); }
  const T& key() const override { return (*records_)[i_]; }
  void Next() override {
    if (++i_ % ChunkedArray<T>::kPerChunk == 0 && release_) owned_.release(i_ / ChunkedArray<T>::kPerChunk - 1);
  }

 private:
  ChunkedArray<T> owned_;
  const ChunkedArray<T>* records_;
  bool release_ = false;
  size_t i_ = 0;
};

// A stream of `count` records of T written at `offset` of a temporary file, read through a
// buffer of `buffered` records.
template <typename T>
class FileRunStream : public Stream<T> {
 public:
  FileRunStream(std::shared_ptr<const TempFile> file, uint64_t offset, uint64_t count, size_t buffered)
      : file_(std::move(file)), offset_(offset), count_(count), buffered_(buffered) {
    Fill();
  }
  bool Valid() const override { return pos_ < buf_.size(); }
  const T& key() const override { return buf_[pos_]; }
  void Next() override {
    if (++pos_ == buf_.size()) Fill();
  }
  Status status() const override { return status_; }

 private:
  void Fill() {
    const uint64_t n = status_.ok() ? std::min<uint64_t>(buffered_, count_ - read_) : 0;
    buf_.resize(size_t(n));
    pos_ = 0;
    if (n == 0) return;
    status_ = file_->ReadAt(offset_ + read_ * sizeof(T), buf_.data(), size_t(n) * sizeof(T));
    if (!status_.ok()) buf_.clear();
    read_ += n;
  }
  std::shared_ptr<const TempFile> file_;
  uint64_t offset_, count_, read_ = 0;
  size_t buffered_;
  std::vector<T> buf_;
  size_t pos_ = 0;
  Status status_;
};

// Sorts fixed-size records in at most `memory_budget` bytes. Add() them, then Read() gives
// a stream of them in order (as often as needed), or Take() one that owns them and gives
// the memory and the temporary file back as it goes (the sorter is empty afterwards).
// `Less` is a strict weak ordering; records comparing equal come out in an order fixed by
// the order they were added. One thread at a time.
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

  // The records in order; the sorter keeps them. Adding records while a stream is open
  // is an error.
  Result<std::unique_ptr<Stream<T>>> Read() {
    OANS_RETURN_IF_ERROR(Sort());
    if (runs_.empty()) return std::unique_ptr<Stream<T>>(new ChunkStream<T>(&buffer_));
    return Merge();
  }

  // The records in order, once; the stream owns them and the sorter is empty.
  Result<std::unique_ptr<Stream<T>>> Take() {
    Status s = Sort();
    std::unique_ptr<Stream<T>> out;
    if (s.ok() && runs_.empty()) out.reset(new ChunkStream<T>(std::move(buffer_)));
    if (s.ok() && !runs_.empty()) {
      auto m = Merge();
      if (m.ok()) out = std::move(*m);
      s = m.status();
    }
    buffer_.clear();
    runs_.clear();
    file_.reset();
    count_ = 0;
    sorted_ = false;
    if (!s.ok()) return s;
    return out;
  }

  // Visits every record in order; a non-OK status from `visit` stops the walk.
  Status ForEach(const std::function<Status(const T&)>& visit) {
    auto s = Read();
    return s.ok() ? Visit(**s, visit) : s.status();
  }
  // Like ForEach, once, as Take().
  Status Drain(const std::function<Status(const T&)>& visit) {
    auto s = Take();
    return s.ok() ? Visit(**s, visit) : s.status();
  }

 private:
  struct Run {
    uint64_t offset, count;
  };

  static Status Visit(Stream<T>& s, const std::function<Status(const T&)>& visit) {
    for (; s.Valid(); s.Next()) OANS_RETURN_IF_ERROR(visit(s.key()));
    return s.status();
  }

  Status Sort() {
    if (sorted_) return Status::Ok();
    if (!runs_.empty() && !buffer_.empty()) OANS_RETURN_IF_ERROR(SpillRun());
    if (runs_.empty()) std::sort(buffer_.begin(), buffer_.end(), less_);
    sorted_ = true;
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

  // k-way merge of the runs; each is read through its own buffer, together within the
  // budget.
  Result<std::unique_ptr<Stream<T>>> Merge() {
    buffer_.clear();
    const size_t per_run = std::max<size_t>(64, capacity_ / (runs_.size() + 1));
    std::vector<std::unique_ptr<Stream<T>>> children;
    for (const Run& r : runs_) children.emplace_back(new FileRunStream<T>(file_, r.offset, r.count, per_run));
    auto* m = new MergingStream<T, Less>(std::move(children), less_);
    std::unique_ptr<Stream<T>> out(m);
    OANS_RETURN_IF_ERROR(m->status());
    return out;
  }

  std::string dir_;
  size_t capacity_;
  Less less_;
  ChunkedArray<T> buffer_;
  std::vector<Run> runs_;
  std::shared_ptr<TempFile> file_;
  uint64_t count_ = 0;
  bool sorted_ = false;
};

}  // namespace oans
