#include "lib/scan/scan_figures.h"

#include "lib/scan/csum.h"

namespace oans {
namespace {

using S = ScanStats;
using V = FigureValue;

// Bytes read, by why they were read rather than taken from btrfs checksums.
V ReadByReason(const ChecksumCounts& c) {
  std::map<std::string, uint64_t> m;
  for (size_t i = 0; i < c.read.size(); ++i)
    if (c.read[i]) m[ReadWhyName(ReadWhy(i))] = c.read[i];
  return m;
}

// How the walk found the files.
Figures<S> Found() {
  return {
      {"files", Unit::kCount, "found {} files", [](const S& s) { return V(s.files); }, Place::kHead},
      {"bytes", Unit::kBytes, "({})", [](const S& s) { return V(s.bytes); }, Place::kHead},
      {"dirs", Unit::kCount, "in {} directories", [](const S& s) { return V(s.dirs); }, Place::kHead},
      {"seconds", Unit::kSeconds, "in {}", [](const S& s) { return V(s.seconds); }, Place::kHead},
      {"bytes_read", Unit::kBytes, "read {}", [](const S& s) { return V(s.bytes_read); }},
      {"hashed", Unit::kCount, "hashed {} files", [](const S& s) { return V(s.hashed); }},
      {"tree_mapped", Unit::kCount, "{} files mapped from btrfs's trees, not opened",
       [](const S& s) { return V(s.tree_mapped); }},
      {"unread", Unit::kCount, "left {} files of a unique size unread", [](const S& s) { return V(s.unread); }},
      {"size_paired", Unit::kCount, "{} files paired by size unread (apply compares them)",
       [](const S& s) { return V(s.size_paired); }},
      {"reused", Unit::kCount, "reused {} files from the previous index", [](const S& s) { return V(s.reused); }},
      {"unopened", Unit::kCount, "{} of them not opened", [](const S& s) { return V(s.unopened); }},
      {"same_extents", Unit::kCount, "{} of them proven by their extents",
       [](const S& s) { return V(s.same_extents); }},
      {"followed", Unit::kFlag, "followed btrfs changes", [](const S& s) { return V(s.followed); }},
      {"not_followed", Unit::kName, "", [](const S& s) { return V(std::string(NoFollowName(s.not_followed))); }},
      {"changed_inodes", Unit::kCount, "{} changed inodes looked at", [](const S& s) { return V(s.changed_inodes); }},
      {"quiet_inodes", Unit::kCount, "{} of them unchanged by their items", [](const S& s) { return V(s.quiet_inodes); }},
      {"judge_passes", Unit::kCount, "", [](const S& s) { return V(s.judge_passes); }},
      {"extents_moved", Unit::kCount, "{} of those with new extents only", [](const S& s) { return V(s.extents_moved); }},
      {"tree_ahead_bytes", Unit::kBytes, "read btrfs's trees ahead: {}",
       [](const S& s) { return V(s.tree_ahead_bytes); }},
      {"tree_ahead_leaves", Unit::kCount, "{} tree leaves in disk order",
       [](const S& s) { return V(s.tree_ahead_leaves); }},
      {"tree_ahead_cut", Unit::kFlag, "trees read ahead up to --memory",
       [](const S& s) { return V(s.tree_ahead_cut); }},
      {"tree_ahead_parts", Unit::kCount, "", [](const S& s) { return V(s.tree_ahead_parts); }},
      {"leaves_read_bytes", Unit::kBytes, "read btrfs's leaves written since from the device: {}",
       [](const S& s) { return V(s.leaves_read_bytes); }},
      {"leaves_read", Unit::kCount, "{} leaves", [](const S& s) { return V(s.leaves_read); }},
      {"leaves_read_requests", Unit::kCount, "in {} requests", [](const S& s) { return V(s.leaves_read_requests); }},
      {"leaves_searched", Unit::kCount, "{} ranges searched instead (a leaf written again since)",
       [](const S& s) { return V(s.leaves_searched); }},
      {"inode_tables_bytes", Unit::kBytes, "read XFS's inode tables ahead: {}",
       [](const S& s) { return V(s.inode_tables_bytes); }},
      {"inode_tables_inodes", Unit::kCount, "{} inodes in disk order",
       [](const S& s) { return V(s.inode_tables_inodes); }},
      {"dirs_in_disk_order", Unit::kCount, "read {} directories' blocks in disk order",
       [](const S& s) { return V(s.dirs_in_disk_order); }},
      {"census_extents", Unit::kCount, "counted the references of {} btrfs extents",
       [](const S& s) { return V(s.census_extents); }},
      {"census_looked_up", Unit::kCount, "{} of them by LOGICAL_INO",
       [](const S& s) { return V(s.census_looked_up); }},
  };
}

// Where the sums came from: btrfs checksums, holes, inline data, or reads.
Figures<S> Sums() {
  return {
      {"checksum_bytes", Unit::kBytes, "from btrfs checksums {}", [](const S& s) { return V(s.checksums.bytes); },
       Place::kNewLine},
      {"checksum_files", Unit::kCount, "{} files summed from checksums alone",
       [](const S& s) { return V(s.checksums.files); }},
      {"checksum_searches", Unit::kCount, "{} checksum searches", [](const S& s) { return V(s.checksums.searches); }},
      {"inline_tree_bytes", Unit::kBytes, "inline data from the tree {}",
       [](const S& s) { return V(s.checksums.inline_bytes); }},
      {"hole_bytes", Unit::kBytes, "holes {}", [](const S& s) { return V(s.checksums.hole_bytes); }},
      {"read_by_reason", Unit::kByReason, "read {}", [](const S& s) { return ReadByReason(s.checksums); }},
  };
}

// What was left out, and how the scan read.
Figures<S> LeftOut() {
  return {
      {"errors", Unit::kCount, "skipped {} unreadable", [](const S& s) { return V(s.errors); }, Place::kNewLine},
      {"hardlinks", Unit::kCount, "skipped {} extra hardlinks", [](const S& s) { return V(s.hardlinks); }},
      {"skipped_symlinks", Unit::kCount, "skipped {} symlinks", [](const S& s) { return V(s.skipped_symlinks); }},
      {"skipped_special", Unit::kCount, "skipped {} special files", [](const S& s) { return V(s.skipped_special); }},
      {"skipped_small", Unit::kCount, "skipped {} below --min-size", [](const S& s) { return V(s.skipped_small); }},
      {"excluded", Unit::kCount, "skipped {} excluded", [](const S& s) { return V(s.excluded); }},
      {"skipped_mounts", Unit::kCount, "skipped {} mount points", [](const S& s) { return V(s.skipped_mounts); }},
      {"storage", Unit::kName, "", [](const S& s) { return V(std::string(StorageKindName(s.storage.kind))); }},
      {"threads", Unit::kCount, "", [](const S& s) { return V(uint64_t(s.threads)); }},
      {"order", Unit::kName, "", [](const S& s) { return V(std::string(ReadOrderName(s.order))); }},
  };
}

Figures<S> All() {
  Figures<S> t = Found();
  for (auto part : {Sums(), LeftOut()}) t.insert(t.end(), part.begin(), part.end());
  return t;
}

}  // namespace

const Figures<ScanStats>& ScanFigures() {
  static const Figures<ScanStats> table = All();
  return table;
}

}  // namespace oans
