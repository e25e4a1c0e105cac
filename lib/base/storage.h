// The storage policy: what each kind of storage gets, decided in this one table, which
// the scan, the plan and apply read (never the kind itself); and the storage behind a
// plan's roots, for apply with a plan that records none. The scan measures the devices of the filesystems it
// identifies (lib/scan/reading.h) and records the kind in the index (`spinning`), from
// which the plan takes its round size. docs/architecture.md, "Storage policy".
#pragma once

#include <string>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

struct StoragePolicy {
  int scan_readers;            // the scan's reader threads (--io-threads)
  bool physical_order;         // the scan reads the files it keeps in disk order, not as walked
  // Metadata read in disk order before the scan's walk and apply's first round: btrfs's
  // trees, XFS's inode tables, and apply's directories (docs/architecture.md, "Storage").
  bool read_trees_ahead;
  uint64_t round_size;         // the plan's bytes read per round (--round-size)
  bool open_next_round;        // apply opens the next round's files while a round is read
  bool commit_between_rounds;  // apply commits (syncfs) between rounds (ApplyOptions::commit_every)
  bool walk_in_inode_order;    // the scan's walk lists directories by inode, one walker (WalkOptions)
  int tree_readers;            // a followed scan's changed tree blocks read ahead at once (TreeAheadJob)
  uint64_t tree_ahead_least;   // and only when they take this many bytes
};

// An SSD serves many reads at once and seeks for nothing; a spinning disk serves one
// well, and every seek costs milliseconds (docs/benchmarks.md). On an SSD the search
// reads 32 MiB of changed tree blocks one by one in about a tenth of a second: less is
// not read ahead, which costs a system call a block.
inline constexpr StoragePolicy kSsdPolicy{8, false, false, uint64_t(32) << 20, true, false, false, 16, uint64_t(32) << 20};
inline constexpr StoragePolicy kHddPolicy{1, true, true, uint64_t(48) << 20, false, true, true, 1, 0};
constexpr const StoragePolicy& PolicyFor(StorageKind k) { return k == StorageKind::kHdd ? kHddPolicy : kSsdPolicy; }

// As `choice` says, or with kAuto detected for the devices of the roots' filesystems
// (Sys::DetectStorage: spinning if any of them spins; an SSD when none can be identified).
StorageInfo StorageOfRoots(Sys& sys, const std::vector<std::string>& roots, StorageChoice choice);

}  // namespace oans
