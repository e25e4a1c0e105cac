// The hardlink executor, for filesystems without reflink (ext4...): each whole-file
// destination is compared byte for byte with its source and then replaced by a hardlink
// to it. Linked files are one file from then on, so a pair is linked only when that gives
// no one anything new (LinkPolicy): the same owner, group, permission bits, extended
// attributes (ACLs, security labels, file capabilities) and mtime, names that the same
// users can reach (reach.h), never a setuid or setgid file. A destination with other
// names is never linked (the others would keep the old file), nor to an immutable or
// append-only source.
//
// No writer may lose data. Both files hold a read lease from before the compare until
// the link is in place: the kernel refuses the lease while any process has either file
// open for writing, and breaks it when one opens or truncates it later (that opener waits
// while we hold the lease). The link itself: a hidden name in the destination's directory
// for the source's inode, an atomic exchange of the two names, a last check of the leases
// (a writer that opened the old destination meanwhile gets it back by a second exchange),
// and the hidden name, now the old inode, removed. A round's hidden names are recorded in
// the journal at once before the first is made, and cleared at once after the round
// (one durable write each); RecoverLink removes one left by a killed run, keeping its
// data whenever it was written to.
// Called by the pipeline stage that finishes rounds (one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/apply/compare.h"
#include "lib/apply/executor.h"
#include "lib/apply/link_intent.h"
#include "lib/apply/prefetch.h"
#include "lib/apply/reach.h"
#include "lib/base/paced_sys.h"
#include "lib/base/sys.h"

namespace oans {

// What two files must share to be linked; each relaxation is an explicit option.
struct LinkPolicy {
  bool same_owner = true;   // uid and gid
  bool same_mode = true;    // permission bits (setuid/setgid files are never linked)
  bool same_xattrs = true;  // every extended attribute, ACLs included
  bool same_mtime = true;   // modification time (as util-linux hardlink)
  bool same_reach = true;   // the same users can reach every name of both (reach.h)
};

// Removes the hidden name of an intent a killed run left behind: a second link of the
// source, or the destination's old inode unchanged since it was replaced. An old inode
// written to since is kept, under its hidden name, and `notice` says where.
Status RecoverLink(Sys& sys, const LinkIntent& intent, std::string* notice);

class HardlinkExecutor : public Executor {
 public:
  // `log` may be null only in tests. The compare of a round not read ahead reads
  // through `sys`, at its pace; that of a round read ahead, through sys.inner().
  HardlinkExecutor(PacedSys& sys, LinkPolicy policy, LinkIntentLog* log);
  void Run(const PreparedRound& r, RoundResult* out, const std::function<void(uint64_t)>& tick) override;
  bool Handled(const PlanFileRef& f) const override { return linked_.count({f.fs, f.ino}) != 0; }

  // Why two files may not be linked under `policy`, or "" when they may.
  static std::string PolicyRefusal(const LinkPolicy& policy, const FileStat& a, const FileStat& b,
                                   const std::vector<std::pair<std::string, std::string>>* xa,
                                   const std::vector<std::pair<std::string, std::string>>* xb);

 private:
  // Compares and links one pair; kMismatch/kIoError say why not. *transient when the
  // reason may go away (a writer, a busy file).
  // `in`: its intent, recorded before the round; *keep when it must stay open.
  Status LinkOne(const PreparedRound& r, uint32_t src, uint32_t dst, const LinkIntent& in, bool* transient,
                 bool* keep);
  // The intent of linking dst to src: a new hidden name, the files as they are now.
  LinkIntent IntentFor(const PreparedRound& r, uint32_t src, uint32_t dst);
  // Whether the same users reach every name of the source and the destination.
  Status SameReach(const PlanFileRef& src, const FileStat& s0, const PlanFileRef& dst);
  Status Replace(int src_fd, int dst_fd, const PlanFileRef& dst, const FileStat& d0, const LinkIntent& in,
                 bool* transient, bool* keep);
  // Syncs each directory Replace changed this round, if it is still that directory;
  // returns those not synced (their intents stay open for the next run, RecoverLink).
  std::set<std::string> SyncDirs();
  Sys& sys_;
  Sys& unpaced_;  // sys_ without the pace
  const LinkPolicy policy_;
  LinkIntentLog* log_;
  FileCompare compare_;
  Reach reach_;
  uint64_t freed_ = 0;  // bytes the destination LinkOne replaced held on disk
  std::set<std::pair<uint32_t, uint64_t>> linked_;  // destinations handled, (fs, inode) as planned
  // The names this round gave each source, by (device, inode): the source's names besides
  // the plan's when a later destination's reach is weighed.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::string>> names_given_;
  // The directories Replace opened this round, by path: (device, inode) as opened.
  std::map<std::string, std::pair<uint64_t, uint64_t>> changed_dirs_;
};

}  // namespace oans
