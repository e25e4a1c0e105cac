// Sorted streams: pull iterators over records in sorted order, the one way the planner's
// stages, oans-diff and `--since` read sorted data. A stream is Valid() while it has a
// current record, key() is that record (its sort key and whatever travels with it), Next()
// moves on; once it is no longer valid, status() says whether it ended or failed.
//
//   VectorStream   records in a sorted std::vector (tests, small inputs)
//   MergingStream  k sorted streams read as one sorted stream (a heap of the k heads)
//   MergeJoin      two streams sorted on one key, visited key by key (bounded memory:
//                  one record of the left side is held)
//
// ExternalSorter and RecordStore (spill.h) hand out streams of their contents.
// Threads: a stream, and the streams it reads, belong to one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace oans {

template <typename T>
class Stream {
 public:
  virtual ~Stream() = default;
  virtual bool Valid() const = 0;
  virtual const T& key() const = 0;  // only while Valid()
  virtual void Next() = 0;           // only while Valid()
  virtual Status status() const { return Status::Ok(); }
};

template <typename T>
class VectorStream : public Stream<T> {
 public:
  explicit VectorStream(std::vector<T> records) : records_(std::move(records)) {}
  bool Valid() const override { return i_ < records_.size(); }
  const T& key() const override { return records_[i_]; }
  void Next() override { ++i_; }

 private:
  std::vector<T> records_;
  size_t i_ = 0;
};

// The k-way merge of sorted streams. Records that compare equal come out in an order
// fixed by the inputs (the same inputs always give the same output), not necessarily
// the order of the inputs. The first child that fails ends the stream with its status.
template <typename T, typename Less>
class MergingStream : public Stream<T> {
 public:
  MergingStream(std::vector<std::unique_ptr<Stream<T>>> children, Less less = Less())
      : children_(std::move(children)), less_(less), heap_(Greater{this}) {
    for (size_t i = 0; i < children_.size(); ++i) Admit(i);
  }
  bool Valid() const override { return status_.ok() && !heap_.empty(); }
  const T& key() const override { return children_[heap_.top()]->key(); }
  void Next() override {
    const size_t i = heap_.top();
    heap_.pop();
    children_[i]->Next();
    Admit(i);
  }
  Status status() const override { return status_; }

 private:
  struct Greater {
    const MergingStream* m;
    bool operator()(size_t a, size_t b) const { return m->less_(m->children_[b]->key(), m->children_[a]->key()); }
  };
  void Admit(size_t i) {
    if (children_[i]->Valid()) {
      heap_.push(i);
    } else if (Status s = children_[i]->status(); !s.ok() && status_.ok()) {
      status_ = s;
    }
  }
  std::vector<std::unique_ptr<Stream<T>>> children_;
  Less less_;
  std::priority_queue<size_t, std::vector<size_t>, Greater> heap_;
  Status status_;
};

// Walks two streams sorted on one key: `left_key(l)` and `right_key(r)` give a record's
// key (a copyable value with == and <, e.g. a tuple), and both streams are sorted by it.
// For every key: when the right side has records with it, visit(left, &r) for each such
// r, where `left` is the LAST left record with that key or null; when only the left side
// has it, visit(&last_left, nullptr). (The last left record wins, as a later entry for
// one inode does in an index.) Memory: one left record. A non-OK status from `visit` or
// from either stream ends the walk.
template <typename L, typename R, typename LeftKey, typename RightKey, typename Visit>
Status MergeJoin(Stream<L>& left, Stream<R>& right, LeftKey left_key, RightKey right_key, Visit visit) {
  while (left.Valid() || right.Valid()) {
    OANS_RETURN_IF_ERROR(left.status());  // a failed stream is no longer valid: stop at once
    OANS_RETURN_IF_ERROR(right.status());
    auto k = !right.Valid()                                                        ? left_key(left.key())
             : !left.Valid() || right_key(right.key()) < left_key(left.key()) ? right_key(right.key())
                                                                                   : left_key(left.key());
    std::optional<L> last;
    while (left.Valid() && left_key(left.key()) == k) {
      last = left.key();
      left.Next();
    }
    bool matched = false;
    while (right.Valid() && right_key(right.key()) == k) {
      matched = true;
      OANS_RETURN_IF_ERROR(visit(last ? &*last : static_cast<const L*>(nullptr), &right.key()));
      right.Next();
    }
    if (!matched) OANS_RETURN_IF_ERROR(visit(&*last, static_cast<const R*>(nullptr)));
  }
  OANS_RETURN_IF_ERROR(left.status());
  return right.status();
}

}  // namespace oans
