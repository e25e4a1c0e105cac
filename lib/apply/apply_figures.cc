#include "lib/apply/apply_figures.h"

namespace oans {
namespace {

using S = ApplyStats;
using V = FigureValue;

// Rounds and operations, and the bytes they shared.
Figures<S> Done() {
  return {
      {"dry_run", Unit::kFlag, "dry run:", [](const S& s) { return V(s.dry_run); }, Place::kHead},
      {"rounds_done", Unit::kCount, "done {} rounds", [](const S& s) { return V(s.rounds_done); }, Place::kHead},
      {"rounds", Unit::kCount, "of {}", [](const S& s) { return V(s.rounds); }, Place::kHead},
      {"seconds", Unit::kSeconds, "in {}", [](const S& s) { return V(s.seconds); }, Place::kHead},
      {"rounds_from_journal", Unit::kCount, "{} rounds done by an earlier run",
       [](const S& s) { return V(s.rounds_from_journal); }},
      {"operations", Unit::kCount, "{} operations", [](const S& s) { return V(s.ops); }},
      {"bytes_planned", Unit::kBytes, "{} planned", [](const S& s) { return V(s.bytes_planned); }},
      {"bytes_deduped", Unit::kBytes, "deduped {}", [](const S& s) { return V(s.bytes_deduped); }},
      {"bytes_rewritten", Unit::kBytes, "rewrote {} into new extents", [](const S& s) { return V(s.bytes_rewritten); }},
      {"files_linked", Unit::kCount, "linked {} files", [](const S& s) { return V(s.files_linked); }},
      {"bytes_linked", Unit::kBytes, "{} held by the linked copies", [](const S& s) { return V(s.bytes_linked); }},
      {"bytes_differed", Unit::kBytes, "{} paired by size alone differed (left as they were)",
       [](const S& s) { return V(s.bytes_differed); }},
      {"bytes_prefetched", Unit::kBytes, "", [](const S& s) { return V(s.bytes_prefetched); }},
      {"files_checked", Unit::kCount, "", [](const S& s) { return V(s.files_checked); }},
      {"open_ahead", Unit::kFlag, "", [](const S& s) { return V(s.open_ahead); }},
      {"tree_ahead_bytes", Unit::kBytes, "read btrfs's trees ahead: {}",
       [](const S& s) { return V(s.tree_ahead_bytes); }},
      {"dirs_ahead", Unit::kCount, "listed {} directories ahead", [](const S& s) { return V(s.dirs_ahead); }},
      {"inode_tables_bytes", Unit::kBytes, "read XFS's inode tables ahead: {}",
       [](const S& s) { return V(s.inode_tables_bytes); }},
      {"commits", Unit::kCount, "", [](const S& s) { return V(s.commits); }},
  };
}

// The space the filesystems measured given back; null when not measured.
Figures<S> Space() {
  return {
      {"net_freed_bytes", Unit::kBytes, "net freed {}",
       [](const S& s) { return s.space_measured ? V(s.net_freed()) : V(); }, Place::kNewLine},
      {"data_freed_bytes", Unit::kBytes, "data {} freed",
       [](const S& s) { return s.space_measured ? V(s.data_freed) : V(); }},
      {"metadata_grown_bytes", Unit::kBytes, "metadata {} grown",
       [](const S& s) { return s.space_measured && s.space_split ? V(s.metadata_grown) : V(); }},
      {"space_approximate", Unit::kFlag, "approximate: other writes moved the space too",
       [](const S& s) { return V(s.space_approximate); }},
  };
}

// What was not done, and why.
Figures<S> LeftOut() {
  return {
      {"bytes_skipped", Unit::kBytes, "", [](const S& s) { return V(s.bytes_skipped()); }},
      {"skipped", Unit::kByReason, "skipped {}", [](const S& s) { return V(s.skipped); }, Place::kNewLine},
      {"not_rewritten", Unit::kByReason, "left {}", [](const S& s) { return V(s.not_rewritten); }},
      {"files_changed", Unit::kCount, "{} files changed since the scan", [](const S& s) { return V(s.files_changed); },
       Place::kNewLine},
      {"errors", Unit::kCount, "{} errors", [](const S& s) { return V(s.errors); }},
      {"rounds_to_retry", Unit::kCount, "{} rounds to retry", [](const S& s) { return V(s.rounds_to_retry); }},
      {"interrupted", Unit::kFlag, "stopped early", [](const S& s) { return V(s.interrupted); }},
  };
}

Figures<S> All() {
  Figures<S> t = Done();
  for (auto part : {Space(), LeftOut()}) t.insert(t.end(), part.begin(), part.end());
  return t;
}

}  // namespace

const Figures<ApplyStats>& ApplyFigures() {
  static const Figures<ApplyStats> table = All();
  return table;
}

}  // namespace oans
