#include "lib/scan/kept.h"

#include "lib/base/fd.h"
#include "lib/base/tsan.h"

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <tuple>

#include "lib/base/units.h"
#include "lib/scan/entry.h"

namespace oans {
namespace {

// One file between the pipeline's stages.
struct Item {
  size_t i;
  FileEntry e;
  bool finished = true;  // false: stopped while reading it, not recorded
};

// Kept file `c`'s record so far in *e, and the file opened without following symlinks
// (`at` on it; the builder checks it is still the file walked). When it cannot be
// opened, *e holds the error and the result does too.
Result<Fd> OpenKept(const KeptRun& job, Candidate& c, FileEntry* e, FileAt* at) {
  *e = EntryOf(c.entry, c.fs);
  e->other_paths = std::move(c.other_paths);
  auto fd = Own(job.sys, job.sys.OpenNoFollow(c.entry.path));
  if (!fd.ok()) {
    FailEntry(e, fd.status());
    return fd.status();
  }
  *at = FileAt(job.filesystems.Key(c.fs), job.filesystems.IsBtrfs(c.fs));
  at->fd = fd->get();
  return fd;
}

// The parallel stage: opens kept file `c` and reads it.
Item* ReadOne(const KeptRun& job, Candidate& c, size_t i, bool drop_pages) {
  auto* it = new Item{i, {}};
  FileAt at("", false);
  auto fd = OpenKept(job, c, &it->e, &at);
  if (!fd.ok()) return it;
  at.drop_pages = drop_pages;
  it->finished = job.builder.Build(at, &it->e) != Built::kStopped;
  return it;
}

// The record of a file paired by size: opened, mapped, not read; with an error when it
// cannot be opened or is another file now.
FileEntry MapPaired(const KeptRun& job, Candidate& c) {
  FileEntry e;
  FileAt at("", false);
  if (auto fd = OpenKept(job, c, &e, &at); fd.ok()) job.builder.MapOnly(at, &e);
  return e;
}

// Outside whole files only, pairs leave their blocks unkeyed until the next scan: said.
void TellPairs(Observer& observer, uint64_t files, uint64_t bytes) {
  observer.Notice("note: " + std::to_string(files) + " files (" + FormatSize(bytes) +
                  ") share their size with exactly one other: mapped, not read (the plan pairs them whole and "
                  "apply compares them). Their partial duplicates are found by the next scan with --previous, "
                  "which reads them");
}

}  // namespace

uint64_t FirstPhysical(const std::vector<FiemapExtent>& extents) {
  for (const auto& e : extents)
    if (!(e.flags & (kExtentInline | kExtentDelalloc | kExtentUnknown))) return e.physical;
  return UINT64_MAX;
}

BySize BySizeFor(const ScanOptions& o, bool unkeyed) {
  BySize rule;
  if (!unkeyed) return rule;
  rule.unique_unread = o.whole_files_only;
  switch (o.pair_by_size) {
    case PairBySize::kAlways: rule.pair = o.whole_files_only || o.previous.empty(); break;
    case PairBySize::kNever: rule.pair = false; break;
    case PairBySize::kAuto: rule.pair = o.whole_files_only; break;
  }
  return rule;
}

KnownBefore KnownBeforeIn(const PreviousIndex& prev, Filesystems& filesystems) {
  return [&prev, &filesystems](const Candidate& c) {
    return prev.HoldsUnchanged(filesystems.Key(c.fs), EntryOf(c.entry, c.fs));
  };
}

SetAside SetAsideUnique(std::vector<Candidate>* kept, std::vector<uint64_t> written,
                        const KnownBefore& known_before, BySize rule) {
  for (const auto& c : *kept) written.push_back(c.entry.st.size);
  std::sort(written.begin(), written.end());
  auto others = [&](uint64_t size) {
    auto same = std::equal_range(written.begin(), written.end(), size);
    return size_t(same.second - same.first);
  };
  // The kept files by size, (size, position): a size met twice in all, both times
  // here, is a pair.
  std::vector<std::pair<uint64_t, uint32_t>> by_size(kept->size());
  for (uint32_t i = 0; i < by_size.size(); ++i) by_size[i] = {(*kept)[i].entry.st.size, i};
  std::sort(by_size.begin(), by_size.end());
  enum Fate : uint8_t { kRead, kUnread, kPaired };
  std::vector<Fate> fate(kept->size(), kRead);
  for (size_t i = 0; i < by_size.size(); ++i) {
    const auto [size, at] = by_size[i];
    const size_t n = others(size);
    if (n == 1) {
      if (rule.unique_unread) fate[at] = kUnread;
    } else if (rule.pair && n == 2 && i + 1 < by_size.size() && by_size[i + 1].first == size) {
      const uint32_t other = by_size[++i].second;
      const Candidate &c = (*kept)[at], &d = (*kept)[other];
      if (d.fs == c.fs && !known_before(c) && !known_before(d)) fate[at] = fate[other] = kPaired;
    }
  }
  SetAside aside;
  std::vector<Candidate> rest;
  rest.reserve(kept->size());
  for (size_t i = 0; i < kept->size(); ++i) {
    Candidate& c = (*kept)[i];
    if (fate[i] == kRead) {
      rest.push_back(std::move(c));
    } else if (fate[i] == kPaired) {
      aside.paired.push_back(std::move(c));
    } else {
      aside.unread.push_back(EntryOf(c.entry, c.fs));
      aside.unread.back().other_paths = std::move(c.other_paths);
    }
  }
  kept->swap(rest);
  return aside;
}

void PlaceKept(Sys& sys, std::vector<Candidate>* kept) {
  for (auto& c : *kept) {
    auto fd = Own(sys, sys.OpenNoFollow(c.entry.path));
    if (!fd.ok()) continue;
    std::vector<FiemapExtent> extents;
    if (sys.Fiemap(fd->get(), &extents).ok()) c.entry.first_physical = FirstPhysical(extents);
  }
  std::stable_sort(kept->begin(), kept->end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.entry.first_physical, a.entry.st.ino) < std::tie(b.entry.first_physical, b.entry.st.ino);
  });
}

Status WriteUnread(const KeptRun& job, std::vector<Candidate>* kept, std::vector<uint64_t> written,
                   const KnownBefore& known_before, BySize rule) {
  SetAside aside = SetAsideUnique(kept, std::move(written), known_before, rule);
  if (job.stats->order == ReadOrder::kPhysical) PlaceKept(job.sys, kept);
  for (auto& e : aside.unread) {
    job.stats->unread++;
    CountRecord(e, job.stats, job.observer);
    OANS_RETURN_IF_ERROR(job.writer->Add(std::move(e)));
  }
  uint64_t mapped = 0, paired = 0, paired_bytes = 0;
  auto last_progress = std::chrono::steady_clock::now();
  for (auto& c : aside.paired) {
    if (job.o.stop && job.o.stop->load()) break;  // the rest are left for the next scan
    if (auto now = std::chrono::steady_clock::now(); now - last_progress > std::chrono::milliseconds(200)) {
      last_progress = now;
      job.observer->Progress({"map", 0, 0, mapped, aside.paired.size()});
    }
    ++mapped;
    FileEntry e = MapPaired(job, c);
    if (e.size_paired) {
      job.stats->size_paired++;
      paired++;
      paired_bytes += e.size;
    }
    CountRecord(e, job.stats, job.observer);
    OANS_RETURN_IF_ERROR(job.writer->Add(std::move(e)));
  }
  if (!rule.unique_unread && paired) TellPairs(*job.observer, paired, paired_bytes);
  return Status::Ok();
}

std::vector<Candidate> MergeKept(std::vector<WalkEntry>* walked, Filesystems& filesystems, ScanStats* stats) {
  std::vector<WalkEntry>& files = *walked;
  // An index is sorted rather than the entries themselves, so each entry moves once.
  std::vector<uint32_t> by_inode(files.size());
  for (uint32_t i = 0; i < by_inode.size(); ++i) by_inode[i] = i;
  std::sort(by_inode.begin(), by_inode.end(), [&](uint32_t x, uint32_t y) {
    const WalkEntry &a = files[x], &b = files[y];
    return std::tie(a.st.dev, a.st.ino, a.path) < std::tie(b.st.dev, b.st.ino, b.path);
  });
  std::vector<Candidate> cands;
  cands.reserve(files.size());
  for (uint32_t i : by_inode) {
    WalkEntry& f = files[i];
    if (!cands.empty() && cands.back().entry.st.dev == f.st.dev && cands.back().entry.st.ino == f.st.ino) {
      cands.back().other_paths.push_back(std::move(f.path));
      stats->hardlinks++;
      continue;
    }
    cands.emplace_back();
    cands.back().entry = std::move(f);
  }
  std::vector<uint32_t>().swap(by_inode);
  std::vector<WalkEntry>().swap(files);
  for (auto& c : cands) c.fs = filesystems.Of(c.entry.st.dev, -1, c.entry.path, c.entry.root);
  if (stats->order == ReadOrder::kPhysical)
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.entry.first_physical, a.entry.st.ino) < std::tie(b.entry.first_physical, b.entry.st.ino);
    });
  // Inode order (and hardlinks in walk order) needs nothing: the merge sorted by inode.
  return cands;
}

Status ReadKept(const KeptRun& job, std::vector<Candidate>& kept, KeptProgress* progress) {
  const ScanOptions& o = job.o;
  ScanStats* stats = job.stats;
  Observer* observer = job.observer;
  // Readers wait on I/O, so there may be more of them than cores.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism,
                            size_t(std::max<int>(stats->threads, int(std::thread::hardware_concurrency()))));
  tbb::task_arena arena(stats->threads);
  for (auto& c : kept) progress->total += c.entry.st.size;
  // More to read than --memory: what is read cannot stay cached until apply. Each file's
  // pages are then dropped once it is hashed, so that they do not push the inodes and
  // directories the scan and apply look up again out of a memory limit.
  const bool drop_pages = progress->total > o.memory;
  Status write_status;  // the recording stage's
  std::atomic<bool> write_failed{false};
  size_t next = 0;
  PipelineOrder order;
  auto last_progress = std::chrono::steady_clock::now();
  auto hand_out = [&](tbb::flow_control& fc) -> size_t {
    SerialRun run(order, 0);
    if (next >= kept.size() || write_failed.load() || (o.stop && o.stop->load())) {
      fc.stop();
      return 0;
    }
    OANS_TSAN_RELEASE(&kept[next]);
    return next++;
  };
  auto read = [&](size_t i) -> Item* {
    OANS_TSAN_ACQUIRE(&order.start);
    OANS_TSAN_ACQUIRE(&kept[i]);
    Item* it = ReadOne(job, kept[i], i, drop_pages);
    if (it) OANS_TSAN_RELEASE(it);
    return it;
  };
  auto record = [&](Item* it) {
    SerialRun run(order, 2);
    if (it) OANS_TSAN_ACQUIRE(it);
    std::unique_ptr<Item> own(it);
    progress->done += kept[it->i].entry.st.size;
    if (!it->finished) return;
    CountRecord(it->e, stats, observer);
    if (write_status.ok()) write_status = job.writer->Add(std::move(it->e));
    if (!write_status.ok()) write_failed.store(true);
    auto now = std::chrono::steady_clock::now();
    if (now - last_progress > std::chrono::milliseconds(200)) {
      last_progress = now;
      observer->Progress({"hash", progress->done, progress->total, stats->files, job.found});
    }
  };
  OANS_TSAN_RELEASE(&order.start);
  arena.execute([&] {
    tbb::parallel_pipeline(size_t(stats->threads) * 2,
                           tbb::make_filter<void, size_t>(tbb::filter_mode::serial_in_order, hand_out) &
                               tbb::make_filter<size_t, Item*>(tbb::filter_mode::parallel, read) &
                               tbb::make_filter<Item*, void>(tbb::filter_mode::serial_in_order, record));
  });
  OANS_TSAN_ACQUIRE(&order.stage[0]);
  OANS_TSAN_ACQUIRE(&order.stage[2]);
  return write_status;
}

}  // namespace oans
