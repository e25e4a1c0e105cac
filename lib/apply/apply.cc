#include "lib/apply/apply.h"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <future>
#include <system_error>
#include <memory>

#include "lib/apply/dir_ahead.h"
#include "lib/apply/executor.h"
#include "lib/apply/measure.h"
#include "lib/apply/prefetch.h"
#include "lib/apply/reflink.h"
#include "lib/base/fsinfo.h"
#include "lib/base/inode_sweep.h"
#include "lib/base/paced_sys.h"
#include "lib/base/storage.h"
#include "lib/base/tsan.h"

namespace oans {
namespace {

using Clock = std::chrono::steady_clock;

// At most this much of the extent and free space trees is read ahead on a spinning disk:
// the blocks must stay cached next to two rounds and the kernel's inodes under a memory
// limit as small as 512 MiB. A larger extent tree (a filesystem of millions of extents)
// is left to be read as the dedupes meet it.
constexpr uint64_t kTreeAheadBudget = 128ull << 20;

std::unique_ptr<Executor> MakeExecutor(PacedSys& sys, const ApplyOptions& o) {
  if (o.dry_run) return std::make_unique<DryRunExecutor>(o.on_dry_run);
  if (o.hardlink) return std::make_unique<HardlinkExecutor>(sys, o.link_policy, o.link_log);
  return std::make_unique<ReflinkExecutor>(sys);
}

// The state of one run, shared by the two stages (and the thread that opens the round
// after the one being read); each field says which stage writes it.
class Run {
 public:
  Run(Sys& sys, PlanReader& plan, const ApplyOptions& o, Observer* observer, ApplyStats* stats)
      : sys_(sys),
        o_(o),
        observer_(observer),
        stats_(stats),
        h_(plan.header()),
        plan_(plan),
        verifier_(sys, h_),
        paced_(sys, o.max_rate),
        buffer_(1u << 20),
        executor_(MakeExecutor(paced_, o)) {}

  Status Go();

 private:
  bool ShouldStop() const { return (o_.stop && o_.stop->load()) || deadline_hit_.load(); }
  // Whether rounds are read into the page cache before and dropped after their dedupe.
  bool Prefetching() const { return o_.prefetch && !o_.dry_run; }
  // Stage 1: the next round, opened, checked and read ahead; null at the end. The round
  // after it is opened and checked meanwhile, on a thread of its own (OpenNext): its
  // lookups and inode reads overlap this round's reads instead of adding to them.
  PreparedRound* Prepare(tbb::flow_control& fc);
  // Stage 1, on a spinning disk. The filesystem writes the dedupes' metadata changes when
  // it decides to (btrfs: when its metadata reservations run short, or every 30 s), which
  // is mostly while a round is being read: the disk then goes back and forth between the
  // reads and a thousand metadata writes (twice each, with btrfs's DUP metadata). So this
  // stage commits them itself (syncfs through one of the round's files) before it reads
  // the round, once o_.commit_every bytes were deduped since it last did: the commit's
  // writes come between two rounds' reads, though the round before may still be being
  // deduped meanwhile, and btrfs may still commit on its own.
  void CommitIfDue(const PreparedRound& p);
  // The next round from the plan, its files opened and checked; null at the end of the
  // plan, on a stop or when the plan cannot be read (plan_error_).
  std::unique_ptr<PreparedRound> OpenNext();
  // Stage 2: executes, journals and counts one round.
  void Finish(PreparedRound* p);
  void ReportProblems(const PreparedRound& p);
  // Removes the hidden hardlink names a killed run left (lib/apply/hardlink.h).
  Status RecoverLinks();
  void Progress() {
    observer_->Progress({"dedupe", done_bytes_, h_.planned_bytes, stats_->rounds_done, stats_->rounds});
  }

  Sys& sys_;
  const ApplyOptions& o_;
  Observer* observer_;
  ApplyStats* stats_;     // stage 2
  const PlanHeader& h_;
  PlanReader& plan_;      // stage 1 (OpenNext)
  Verifier verifier_;     // stage 1 (OpenNext)
  std::future<std::unique_ptr<PreparedRound>> next_;  // stage 1: the round being opened
  PacedSys paced_;        // both: sys_ at --max-rate, for the reads and copies
  std::vector<char> buffer_;  // stage 1
  uint64_t head_ = 0;         // stage 1: where the last round's prefetch ended on disk
  std::unique_ptr<Executor> executor_;  // stage 2
  std::unique_ptr<Releaser> releaser_;  // stage 2 hands rounds to it; set when prefetching
  std::atomic<bool> deadline_hit_{false};
  bool stopped_early_ = false;  // stage 1: stopped before the plan's end
  bool discarded_ = false;      // stage 2: a prepared round was not run
  Status plan_error_;           // stage 1
  Status journal_error_;        // stage 2
  std::atomic<bool> journal_failed_{false};  // stage 2 writes, stage 1 reads
  uint64_t done_bytes_ = 0;     // stage 2
  std::atomic<uint64_t> deduped_{0};  // stage 2 writes, stage 1 reads: bytes deduped so far
  uint64_t committed_at_ = 0;   // stage 1: deduped_ at its last commit
  StoragePolicy policy_ = kSsdPolicy;  // of the plan's roots' storage, set by Go
  uint64_t commits_ = 0;        // stage 1: commits it made
  Clock::time_point last_progress_ = Clock::now();  // stage 2
};

std::unique_ptr<PreparedRound> Run::OpenNext() {
  if (ShouldStop() || journal_failed_.load()) {
    stopped_early_ = true;
    return nullptr;
  }
  auto p = std::make_unique<PreparedRound>();
  auto more = plan_.Next(&p->round);
  if (!more.ok() || !*more) {
    if (!more.ok()) plan_error_ = more.status();
    return nullptr;
  }
  if (o_.journal && o_.journal->Done(p->round.index)) {
    p->from_journal = true;
    return p;
  }
  verifier_.OpenAll(p.get());
  return p;
}

PreparedRound* Run::Prepare(tbb::flow_control& fc) {
  std::unique_ptr<PreparedRound> p = next_.valid() ? next_.get() : OpenNext();
  if (p && !p->from_journal && (ShouldStop() || journal_failed_.load())) {
    // Stopped while it was opened: never started, left for the next run.
    Verifier::CloseAll(p.get());
    stopped_early_ = true;
    p.reset();
  }
  if (!p) {
    fc.stop();
    return nullptr;
  }
  if (stats_->open_ahead) try {
      next_ = std::async(std::launch::async, [this] { return OpenNext(); });
    } catch (const std::system_error&) {
      // No thread to be had: the next round is opened here, after this one is read.
    }
  if (!p->from_journal && Prefetching()) {
    if (policy_.commit_between_rounds) CommitIfDue(*p);
    Prefetch(paced_, &buffer_, &head_, p.get());
  }
  return p.release();
}

void Run::CommitIfDue(const PreparedRound& p) {
  const uint64_t done = deduped_.load();
  if (o_.commit_every == 0 || done - committed_at_ < o_.commit_every) return;
  for (const Fd& f : p.fds)
    if (const int fd = f.get(); fd >= 0) {
      // A hint: what is not committed now is committed later.
      if (sys_.Syncfs(fd).ok()) commits_++;
      committed_at_ = done;
      return;
    }
}

void Run::ReportProblems(const PreparedRound& p) {
  for (size_t i = 0; i < p.problem.size(); ++i)
    if (!p.problem[i].empty() && !executor_->Handled(p.round.files[i])) {
      stats_->files_changed++;
      observer_->FileNotice(p.round.files[i].path, "skipped, " + p.problem[i]);
    }
}

void Run::Finish(PreparedRound* raw) {
  std::unique_ptr<PreparedRound> p(raw);
  if (!p) return;
  if (p->from_journal) {
    stats_->rounds_from_journal++;
    return;
  }
  if (ShouldStop() || !journal_error_.ok()) {
    // Stopped during the previous round: this one was only prepared, never started.
    Verifier::CloseAll(p.get());
    discarded_ = true;
    return;
  }
  stats_->bytes_prefetched += p->prefetched;
  stats_->files_checked += p->round.files.size();
  ReportProblems(*p);
  RoundResult r;
  executor_->Run(*p, &r, [&](uint64_t bytes) {
    done_bytes_ += bytes;
    auto now = Clock::now();
    if (now - last_progress_ > std::chrono::milliseconds(200)) {
      last_progress_ = now;
      Progress();
    }
  });
  const uint64_t index = p->round.index;
  if (releaser_) releaser_->Add(std::move(p));  // dropped from the page cache and closed meanwhile
  else Verifier::CloseAll(p.get());
  r.AddTo(stats_);
  deduped_ = stats_->bytes_deduped + stats_->bytes_linked + stats_->bytes_rewritten;
  for (const auto& n : r.notices) observer_->FileNotice(n.path, n.reason);
  if (r.retry) stats_->rounds_to_retry++;
  if (o_.journal && !o_.dry_run && !r.retry) {
    journal_error_ = o_.journal->MarkDone(index);
    if (!journal_error_.ok()) {
      journal_failed_ = true;
      return;
    }
  }
  stats_->rounds_done++;
  if (o_.deadline != Clock::time_point{} && Clock::now() >= o_.deadline) {
    stats_->deadline_reached = true;
    deadline_hit_ = true;
  }
  Progress();
}

Status Run::RecoverLinks() {
  if (!o_.journal || o_.dry_run) return Status::Ok();
  for (const LinkIntent& in : o_.journal->Pending()) {
    std::string notice;
    Status s = RecoverLink(sys_, in, &notice);
    if (!notice.empty()) observer_->Notice(notice);
    if (s.ok()) {
      OANS_RETURN_IF_ERROR(o_.journal->End(in));
    } else {
      observer_->Notice(in.dir + "/" + in.tmp + ": hidden link of an earlier run not settled (its directory not "
                        "synced, or the name not removed); kept in the journal for the next run: " + s.message());
      OANS_RETURN_IF_ERROR(o_.journal->Begin(in));  // kept for the next run
    }
  }
  return Status::Ok();
}

Status Run::Go() {
  stats_->rounds = h_.rounds;
  stats_->bytes_planned = h_.planned_bytes;
  OANS_RETURN_IF_ERROR(CheckPlanFilesystems(sys_, h_));
  // As told (--storage), else as the plan recorded, else measured (older plans).
  const bool recorded = o_.storage == StorageChoice::kAuto && h_.storage;
  policy_ = PolicyFor(recorded ? *h_.storage : StorageOfRoots(sys_, h_.roots, o_.storage).kind);
  stats_->open_ahead = policy_.open_next_round;
  OANS_RETURN_IF_ERROR(RecoverLinks());
  SpaceMeter meter;
  if (!o_.dry_run && h_.rounds > 0) meter.Before(sys_, h_);
  if (policy_.read_trees_ahead && Prefetching() && h_.rounds > 0) {
    const auto stop = [this] {
      return ShouldStop() || (o_.deadline != Clock::time_point{} && Clock::now() >= o_.deadline);
    };
    stats_->tree_ahead_bytes = ReadPlanTreesAhead(sys_, h_, kTreeAheadBudget, stop);
    // Each group has two files at least: the roots' share, at least.
    const auto notice = [this](const std::string& text) { observer_->Notice(text); };
    const uint64_t files = h_.groups > UINT64_MAX / 2 ? UINT64_MAX : 2 * h_.groups;
    stats_->inode_tables_bytes = SweepInodeTables(sys_, h_.roots, files, stop, notice).bytes;
    stats_->dirs_ahead = ListPlanDirectoriesAhead(sys_, h_.roots, o_.directories, stop, notice);
  }
  if (Prefetching()) releaser_ = std::make_unique<Releaser>(sys_);
  // Two threads at least, so that prefetch overlaps the dedupe even on one core.
  tbb::task_arena arena(2);
  PipelineOrder order;
  OANS_TSAN_RELEASE(&order.start);
  arena.execute([&] {
    tbb::parallel_pipeline(
        2,
        tbb::make_filter<void, PreparedRound*>(tbb::filter_mode::serial_in_order,
                                               [&](tbb::flow_control& fc) {
                                                 SerialRun run(order, 0);
                                                 PreparedRound* p = Prepare(fc);
                                                 if (p) OANS_TSAN_RELEASE(p);
                                                 return p;
                                               }) &
            tbb::make_filter<PreparedRound*, void>(tbb::filter_mode::serial_in_order, [&](PreparedRound* p) {
              SerialRun run(order, 1);
              if (p) OANS_TSAN_ACQUIRE(p);
              Finish(p);
            }));
  });
  OANS_TSAN_ACQUIRE(&order.stage[0]);
  OANS_TSAN_ACQUIRE(&order.stage[1]);
  releaser_.reset();  // every deduped round released and closed
  stats_->commits = commits_;
  if (next_.valid()) {  // opened after the last round to run: closed unused
    std::unique_ptr<PreparedRound> left = next_.get();
    if (left && !left->from_journal) Verifier::CloseAll(left.get());
  }
  if (!o_.dry_run && h_.rounds > 0) meter.After(sys_, stats_);
  OANS_RETURN_IF_ERROR(journal_error_);
  OANS_RETURN_IF_ERROR(plan_error_);
  if ((stopped_early_ && ShouldStop()) || discarded_) stats_->interrupted = true;
  if (stats_->interrupted)
    return Status::Interrupted(std::string(stats_->deadline_reached ? "deadline reached" : "stopped") + " after " +
                               std::to_string(stats_->rounds_done) + " rounds");
  return Status::Ok();
}

}  // namespace

Status RunApply(Sys& sys, PlanReader& plan, const ApplyOptions& o, Observer* observer, ApplyStats* stats) {
  Observer quiet;
  Run run(sys, plan, o, observer ? observer : &quiet, stats);
  return run.Go();
}

Status CheckPlanCanShare(const PlanHeader& h, bool hardlink) {
  std::vector<std::string> paths = h.roots;
  if (paths.empty())
    for (const auto& fs : h.filesystems) paths.push_back(fs.mount_point);
  for (const auto& p : paths) {
    if (p.empty() || ::access(p.c_str(), F_OK) != 0) continue;
    Status s = CheckPathCanShareData(p, hardlink);
    if (!s.ok() && s.code() != Status::Code::kIoError) return s;
  }
  return Status::Ok();
}

}  // namespace oans
