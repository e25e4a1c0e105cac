#include "lib/apply/apply.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "lib/base/json.h"
#include "lib/base/units.h"

namespace oans {
namespace {

const char* ErrnoName(int e) {
  switch (e) {
    case EPERM: return "EPERM (not permitted: immutable, append-only or not owner)";
    case EACCES: return "EACCES (permission denied)";
    case ETXTBSY: return "ETXTBSY (active swapfile)";
    case EXDEV: return "EXDEV (another filesystem)";
    case EINVAL: return "EINVAL (unaligned range, nodatacow mismatch or unsupported)";
    case EAGAIN: return "EAGAIN (busy: btrfs send running)";
    case EOPNOTSUPP: return "EOPNOTSUPP (filesystem cannot dedupe)";
    case ENOENT: return "ENOENT (vanished since scan)";
    case ELOOP: return "ELOOP (a symlink in the path)";
    case EISDIR: return "EISDIR (now a directory)";
    case ENOSPC: return "ENOSPC (no space for metadata)";
    case EIO: return "EIO (I/O error)";
    default: return nullptr;
  }
}

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string ReasonFor(int errnum) {
  const char* n = ErrnoName(errnum);
  return n ? n : ("errno " + std::to_string(errnum) + " (" + std::strerror(errnum) + ")");
}

// A round with its files opened and checked.
struct Prepared {
  PlanRound round;
  std::vector<int> fds;              // -1 when unusable
  std::vector<std::string> problem;  // why a file is unusable
  uint64_t prefetched = 0;
  bool end = false;
  bool from_journal = false;  // finished by an earlier run
  Status error;  // the plan could not be read further
};

class FileChecker {
 public:
  FileChecker(Sys& sys, const PlanHeader& h) : sys_(sys), h_(h) {}

  // Opens `f` and checks it against the plan; returns the fd or a reason.
  Result<int> Open(const PlanFileRef& f) {
    if (!UnderRoots(f.path)) return Status::Mismatch("outside the plan's roots");
    auto fd = sys_.OpenNoFollow(f.path);
    if (!fd.ok()) return Status::Io(ReasonFor(fd.status().errnum()), fd.status().errnum());
    auto st = sys_.Fstat(*fd);
    Status bad;
    if (!st.ok()) bad = st.status();
    else if (!S_ISREG(st->mode)) bad = Status::Mismatch("changed since scan (not a regular file)");
    else if (st->dev != f.dev || st->ino != f.ino) bad = Status::Mismatch("changed since scan (replaced by another file)");
    else if (st->size != f.size || st->mtime_ns != f.mtime_ns) bad = Status::Mismatch("changed since scan (modified)");
    else if (!FsMatches(*fd, st->dev, f.fs)) bad = Status::Mismatch("on another filesystem than the plan names");
    if (!bad.ok()) {
      sys_.Close(*fd);
      return bad;
    }
    return fd;
  }

 private:
  bool UnderRoots(const std::string& p) const {
    if (p.find("/../") != std::string::npos || p.find("/./") != std::string::npos) return false;
    for (const auto& r : h_.roots) {
      if (p == r) return true;
      if (r == "/" || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/')) return true;
    }
    return false;
  }
  bool FsMatches(int fd, uint64_t dev, uint32_t fs) {
    auto it = dev_ok_.find(dev);
    if (it == dev_ok_.end()) {
      auto id = sys_.Identify(fd);
      const FsRecord& want = h_.filesystems[fs];
      bool ok = id.ok() && id->uuid == want.uuid && id->subvolume == want.subvolume;
      it = dev_ok_.emplace(dev, ok).first;
    }
    return it->second;
  }
  Sys& sys_;
  const PlanHeader& h_;
  std::unordered_map<uint64_t, bool> dev_ok_;
};

// Keeps the average read rate of every thread together at or below a limit.
class RateLimiter {
 public:
  explicit RateLimiter(uint64_t bytes_per_s) : rate_(bytes_per_s), start_(std::chrono::steady_clock::now()) {}
  void Account(uint64_t bytes) {
    if (!rate_) return;
    std::chrono::steady_clock::time_point due;
    {
      std::lock_guard<std::mutex> lk(mu_);
      total_ += bytes;
      due = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(double(total_) / double(rate_)));
    }
    std::this_thread::sleep_until(due);
  }

 private:
  const uint64_t rate_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  uint64_t total_ = 0;
};

// Hardlink mode: compares two whole files byte for byte, then replaces dest with a link
// to src. Both must be unchanged from before the compare to after it.
Status LinkWhole(Sys& sys, int src_fd, int dst_fd, const PlanFileRef& dst, std::vector<char>* a, std::vector<char>* b,
                 RateLimiter* rate) {
  auto s0 = sys.Fstat(src_fd);
  auto d0 = sys.Fstat(dst_fd);
  if (!s0.ok()) return s0.status();
  if (!d0.ok()) return d0.status();
  if (s0->dev != d0->dev) return Status::Io("not on one filesystem", EXDEV);
  if (s0->size != d0->size) return Status::Mismatch("differs (size)");
  for (uint64_t off = 0; off < s0->size;) {
    size_t want = size_t(std::min<uint64_t>(a->size(), s0->size - off));
    auto x = sys.Pread(src_fd, a->data(), want, off);
    auto y = sys.Pread(dst_fd, b->data(), want, off);
    if (!x.ok()) return x.status();
    if (!y.ok()) return y.status();
    if (*x != want || *y != want) return Status::Mismatch("changed while being compared");
    if (std::memcmp(a->data(), b->data(), want) != 0) return Status::Mismatch("differs (changed since scan)");
    off += want;
    rate->Account(2 * want);
  }
  auto s1 = sys.Fstat(src_fd);
  auto d1 = sys.Fstat(dst_fd);
  if (!s1.ok() || !d1.ok() || s1->size != s0->size || s1->mtime_ns != s0->mtime_ns || s1->ctime_ns != s0->ctime_ns ||
      d1->size != d0->size || d1->mtime_ns != d0->mtime_ns || d1->ctime_ns != d0->ctime_ns)
    return Status::Mismatch("changed while being compared");
  return sys.ReplaceWithLink(src_fd, dst.path, *d0);
}

}  // namespace

std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  uint64_t state = seed;
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[size_t(SplitMix64(&state) % i)]);
  return order;
}

Status CheckPlanFilesystems(Sys& sys, const PlanHeader& h) {
  for (const auto& root : h.roots) {
    auto fd = sys.OpenNoFollow(root);
    if (!fd.ok()) continue;  // a vanished root only makes its files fail one by one
    auto id = sys.Identify(*fd);
    sys.Close(*fd);
    if (!id.ok()) continue;
    bool known = false;
    for (const auto& f : h.filesystems) known |= f.uuid == id->uuid;
    if (!known)
      return Status::Mismatch("the plan was made for another filesystem: " + root + " is now on " + id->type +
                              " " + id->uuid + ", which the plan does not name; scan and plan again");
  }
  return Status::Ok();
}

Status RunApply(Sys& sys, PlanReader& plan, const ApplyOptions& o, Observer* observer, ApplyStats* stats) {
  Observer quiet;
  if (!observer) observer = &quiet;
  const PlanHeader& h = plan.header();
  stats->rounds = h.rounds;
  stats->bytes_planned = h.planned_bytes;
  OANS_RETURN_IF_ERROR(CheckPlanFilesystems(sys, h));
  FileChecker checker(sys, h);
  std::vector<char> buffer(1u << 20);
  RateLimiter rate(o.max_rate);
  std::atomic<bool> deadline_hit{false};
  auto should_stop = [&] { return (o.stop && o.stop->load()) || deadline_hit.load(); };
  // Hardlink mode: destinations already handled, by (dev, inode) as planned.
  std::set<std::pair<uint64_t, uint64_t>> linked;
  std::vector<char> cmp_a, cmp_b;
  if (o.hardlink) {
    cmp_a.resize(1u << 20);
    cmp_b.resize(1u << 20);
  }
  auto handled = [&](const PlanFileRef& f) { return o.hardlink && linked.count({f.dev, f.ino}); };

  // Where rounds come from: the plan as it is read, or, without disk order, the whole
  // plan read first and handed out in a fixed pseudo-random permutation. Either way every
  // round is handed out once and named by its index, which is what the journal records.
  std::vector<PlanRound> all;
  std::vector<size_t> permutation;
  size_t next_in_permutation = 0;
  const bool shuffled = o.order == ApplyOrder::kShuffled;
  if (shuffled) {
    for (;;) {
      PlanRound r;
      auto more = plan.Next(&r);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (o.journal && o.journal->Done(r.index)) {
        // Skipped in any case: keep its index only.
        r.files.clear();
        r.ops.clear();
        r.files.shrink_to_fit();
        r.ops.shrink_to_fit();
      }
      all.push_back(std::move(r));
    }
    permutation = ShuffledOrder(all.size(), o.order_seed);
  }
  auto next_round = [&](PlanRound* r) -> Result<bool> {
    if (!shuffled) return plan.Next(r);
    if (next_in_permutation == permutation.size()) return false;
    *r = std::move(all[permutation[next_in_permutation++]]);
    return true;
  };

  auto prepare = [&](Prepared* p) {
    auto more = next_round(&p->round);
    if (!more.ok()) {
      p->error = more.status();
      p->end = true;
      return;
    }
    if (!*more) {
      p->end = true;
      return;
    }
    if (o.journal && o.journal->Done(p->round.index)) {
      p->from_journal = true;
      return;
    }
    const auto& files = p->round.files;
    p->fds.assign(files.size(), -1);
    p->problem.assign(files.size(), "");
    for (size_t i = 0; i < files.size(); ++i) {
      auto fd = checker.Open(files[i]);
      if (fd.ok()) p->fds[i] = *fd;
      else p->problem[i] = fd.status().message();
    }
    if (!o.prefetch || o.dry_run || o.hardlink) return;
    // Read every range once, in physical order.
    struct R {
      uint64_t physical;
      int fd;
      uint64_t offset, length;
    };
    std::vector<R> ranges;
    for (const auto& op : p->round.ops) {
      if (p->fds[op.source] < 0) continue;
      ranges.push_back({op.physical, p->fds[op.source], op.offset, op.length});
      for (const auto& d : op.dests)
        if (p->fds[d.file] >= 0) ranges.push_back({d.physical, p->fds[d.file], d.offset, op.length});
    }
    if (shuffled) {
      // Seeded by the round's index: the same reads whatever position the round runs at.
      const uint64_t seed = o.order_seed ^ (0x9e3779b97f4a7c15ull * (p->round.index + 1));
      std::vector<R> in_plan_order = std::move(ranges);
      ranges.clear();
      for (size_t i : ShuffledOrder(in_plan_order.size(), seed)) ranges.push_back(in_plan_order[i]);
    } else {
      std::sort(ranges.begin(), ranges.end(), [](const R& a, const R& b) { return a.physical < b.physical; });
      // Every range of the round is requested at once, in disk order, so the device has
      // many reads in flight; the plain reads below then wait for them and make sure all
      // of it is in the page cache. Not with --max-rate, whose pace the reads set.
      if (!o.max_rate)
        for (const auto& r : ranges) sys.WillNeed(r.fd, r.offset, r.length);
    }
    for (const auto& r : ranges) {
      for (uint64_t off = 0; off < r.length;) {
        auto n = sys.Pread(r.fd, buffer.data(), size_t(std::min<uint64_t>(buffer.size(), r.length - off)),
                           r.offset + off);
        if (!n.ok() || *n == 0) break;  // the dedupe call will see the problem itself
        off += *n;
        p->prefetched += *n;
        rate.Account(*n);
      }
    }
  };

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Prepared>> queue;
  bool consumer_done = false;
  std::thread producer([&] {
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return queue.empty() || consumer_done; });
        if (consumer_done) return;
      }
      auto p = std::make_unique<Prepared>();
      if (should_stop()) p->end = true;
      else prepare(p.get());
      bool end = p->end;
      {
        std::lock_guard<std::mutex> lk(mu);
        queue.push_back(std::move(p));
      }
      cv.notify_all();
      if (end) return;
    }
  });

  Status result;
  uint64_t done_bytes = 0;
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    std::unique_ptr<Prepared> p;
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return !queue.empty(); });
      p = std::move(queue.front());
      queue.pop_front();
    }
    cv.notify_all();
    if (!p->end && should_stop()) {
      // Stopped during the previous round: this one was only prepared, never started.
      for (int fd : p->fds) sys.Close(fd);
      stats->interrupted = true;
      break;
    }
    if (p->end) {
      result = p->error;
      if (result.ok() && should_stop() && stats->rounds_done + stats->rounds_from_journal < stats->rounds)
        stats->interrupted = true;
      break;
    }
    if (p->from_journal) {
      stats->rounds_from_journal++;
      continue;
    }
    stats->bytes_prefetched += p->prefetched;
    stats->files_checked += p->round.files.size();
    for (size_t i = 0; i < p->problem.size(); ++i)
      if (!p->problem[i].empty() && !handled(p->round.files[i])) {
        stats->files_mismatch++;
        observer->Notice(p->round.files[i].path + ": skipped, " + p->problem[i]);
      }
    for (const auto& op : p->round.ops) {
      stats->ops++;
      const auto& files = p->round.files;
      std::vector<DedupeDest> dests;
      std::vector<uint32_t> dest_file;
      for (const auto& d : op.dests) {
        if (handled(files[d.file])) continue;
        if (p->fds[op.source] < 0) {
          stats->skipped["source " + p->problem[op.source]] += op.length;
          continue;
        }
        if (p->fds[d.file] < 0) {
          stats->skipped[p->problem[d.file]] += op.length;
          continue;
        }
        dests.push_back({p->fds[d.file], d.offset, 0, 0});
        dest_file.push_back(d.file);
      }
      if (dests.empty()) continue;
      if (o.hardlink && !o.dry_run) {
        for (size_t k = 0; k < dests.size(); ++k) {
          const PlanFileRef& sf = files[op.source];
          const PlanFileRef& df = files[dest_file[k]];
          if (dests[k].offset != op.offset || sf.size != df.size) {
            stats->skipped["partial duplicate (hardlink mode links whole files only)"] += op.length;
            continue;
          }
          linked.insert({df.dev, df.ino});
          Status ls = LinkWhole(sys, p->fds[op.source], dests[k].fd, df, &cmp_a, &cmp_b, &rate);
          if (ls.ok()) {
            stats->files_linked++;
            stats->bytes_linked += df.size;
          } else {
            stats->skipped[ls.code() == Status::Code::kIoError ? ReasonFor(ls.errnum()) : ls.message()] += df.size;
            if (ls.code() == Status::Code::kIoError) stats->errors++;
            observer->Notice(df.path + ": not linked, " + ls.message());
          }
        }
        continue;
      }
      if (o.dry_run) {
        if (o.on_dry_run) {
          std::string line = "{\"round\":" + std::to_string(p->round.index) + ",\"source\":" +
                             JsonString(files[op.source].path) + ",\"offset\":" + std::to_string(op.offset) +
                             ",\"length\":" + std::to_string(op.length) + ",\"dests\":[";
          for (size_t k = 0; k < dests.size(); ++k)
            line += std::string(k ? "," : "") + "{\"path\":" + JsonString(files[dest_file[k]].path) +
                    ",\"offset\":" + std::to_string(dests[k].offset) + "}";
          o.on_dry_run(line + "]}");
        }
        done_bytes += op.length * dests.size();
        continue;
      }
      // Whole-call errors (EINVAL for the source, ...) count against every destination.
      Status st = sys.DedupeRange(p->fds[op.source], op.offset, op.length, &dests);
      if (!st.ok()) {
        stats->skipped[ReasonFor(st.errnum())] += op.length * dests.size();
        stats->errors += dests.size();
        observer->Notice(files[op.source].path + ": dedupe failed, " + ReasonFor(st.errnum()));
      } else {
        for (size_t k = 0; k < dests.size(); ++k) {
          DedupeDest d = dests[k];
          uint64_t done = 0;
          // A destination that stopped short continues alone from where it stopped;
          // a call that makes no progress ends the loop.
          for (;;) {
            const uint64_t len = op.length - done;
            if (d.status == kDedupeSame) {
              const uint64_t n = std::min(d.bytes_deduped, len);
              stats->bytes_deduped += n;
              done += n;
              if (done >= op.length) break;
              if (n == 0) {
                stats->skipped["no progress"] += len;
                break;
              }
              std::vector<DedupeDest> one{{d.fd, dests[k].offset + done, 0, 0}};
              Status again = sys.DedupeRange(p->fds[op.source], op.offset + done, op.length - done, &one);
              if (!again.ok()) {
                stats->skipped[ReasonFor(again.errnum())] += op.length - done;
                stats->errors++;
                break;
              }
              d = one[0];
            } else if (d.status == kDedupeDiffers) {
              stats->skipped["differs (changed since scan)"] += len;
              break;
            } else {
              stats->skipped[ReasonFor(-d.status)] += len;
              stats->errors++;
              observer->Notice(files[dest_file[k]].path + ": dedupe failed, " + ReasonFor(-d.status));
              break;
            }
          }
        }
      }
      done_bytes += op.length * dests.size();
      auto now = std::chrono::steady_clock::now();
      if (now - last_progress > std::chrono::milliseconds(200)) {
        last_progress = now;
        observer->Progress({"dedupe", done_bytes, h.planned_bytes, stats->rounds_done, stats->rounds});
      }
    }
    for (int fd : p->fds) sys.Close(fd);
    if (o.journal && !o.dry_run) {
      Status j = o.journal->MarkDone(p->round.index);
      if (!j.ok()) {
        result = j;
        break;
      }
    }
    stats->rounds_done++;
    if (o.deadline != std::chrono::steady_clock::time_point{} && std::chrono::steady_clock::now() >= o.deadline) {
      stats->deadline_reached = true;
      deadline_hit = true;
    }
    observer->Progress({"dedupe", done_bytes, h.planned_bytes, stats->rounds_done, stats->rounds});
  }
  {
    std::lock_guard<std::mutex> lk(mu);
    consumer_done = true;
  }
  cv.notify_all();
  producer.join();
  // After the join: the producer may have queued a round after the loop above stopped.
  for (auto& q : queue)
    for (int fd : q->fds) sys.Close(fd);
  queue.clear();
  if (!result.ok()) return result;
  if (stats->interrupted)
    return Status::Interrupted(std::string(stats->deadline_reached ? "deadline reached" : "stopped") + " after " +
                               std::to_string(stats->rounds_done) + " rounds");
  return Status::Ok();
}

}  // namespace oans
