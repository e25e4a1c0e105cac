#include "lib/plan/plan_figures.h"

namespace oans {
namespace {

using S = PlanStats;
using V = FigureValue;

// The files read, and the space the plan gives back.
Figures<S> Space() {
  return {
      {"files", Unit::kCount, "found {} files", [](const S& s) { return V(s.files); }, Place::kHead},
      {"filesystems", Unit::kCount, "on {} filesystems", [](const S& s) { return V(s.filesystems); }, Place::kHead},
      {"seconds", Unit::kSeconds, "in {}", [](const S& s) { return V(s.seconds); }, Place::kHead},
      {"net_bytes", Unit::kBytes, "net {} to free", [](const S& s) { return V(s.net_bytes); }},
      {"frees_bytes", Unit::kBytes, "data {} freed", [](const S& s) { return V(s.frees_bytes); }},
      {"metadata_bytes", Unit::kBytes, "metadata {} grown", [](const S& s) { return V(s.metadata_bytes); }},
      {"frees_later_bytes", Unit::kBytes, "{} more once read-only snapshots go",
       [](const S& s) { return V(s.frees_later_bytes); }},
      {"refs_known", Unit::kFlag, "", [](const S& s) { return V(s.refs_known); }},
      {"left_alone_bytes", Unit::kBytes, "{} in read-only snapshots left alone",
       [](const S& s) { return V(s.left_alone_bytes); }},
  };
}

// The duplicates found and what the plan does with them.
Figures<S> Duplicates() {
  return {
      {"groups", Unit::kCount, "{} duplicate groups", [](const S& s) { return V(s.whole_groups + s.block_groups); },
       Place::kNewLine},
      {"whole_file_groups", Unit::kCount, "{} of whole files", [](const S& s) { return V(s.whole_groups); }},
      {"block_groups", Unit::kCount, "{} of blocks", [](const S& s) { return V(s.block_groups); }},
      {"duplicate_bytes", Unit::kBytes, "{} duplicate", [](const S& s) { return V(s.duplicate_bytes); }},
      {"size_paired_bytes", Unit::kBytes, "{} of it paired by size alone, unread (apply compares it)",
       [](const S& s) { return V(s.size_paired_bytes); }},
      {"partial_bytes", Unit::kBytes, "{} of it as 4 KiB partial matches",
       [](const S& s) { return V(s.partial_bytes); }},
      {"shared_bytes", Unit::kBytes, "{} already shared", [](const S& s) { return V(s.shared_bytes); }},
      {"planned_bytes", Unit::kBytes, "{} to dedupe", [](const S& s) { return V(s.planned_bytes); }},
      {"operations", Unit::kCount, "{} operations", [](const S& s) { return V(s.ops); }},
      {"rounds", Unit::kCount, "{} rounds", [](const S& s) { return V(s.rounds); }},
      {"operations_alongside", Unit::kCount, "{} operations packed beside a neighbour",
       [](const S& s) { return V(s.ops_alongside); }},
      {"rewrite_bytes", Unit::kBytes, "{} to rewrite into new extents first",
       [](const S& s) { return V(s.rewrite_bytes); }},
      {"partial_left_bytes", Unit::kBytes,
       "{} of partial duplicates left (shorter than --min-run, or freeing no extent)",
       [](const S& s) { return V(s.partial_left_bytes); }},
      {"leaves_rewritten", Unit::kCount, "", [](const S& s) { return V(s.leaves_rewritten); }},
      {"leaves_shared", Unit::kCount, "", [](const S& s) { return V(s.leaves_shared); }},
  };
}

// What was not planned: files the scan could not read, or a --since left out.
Figures<S> LeftOut() {
  return {
      {"skipped_errors", Unit::kCount, "skipped {} unreadable in the scan",
       [](const S& s) { return V(s.skipped_errors); }, Place::kNewLine},
      {"skipped_unread", Unit::kCount, "skipped {} left unread by the scan (a unique size)",
       [](const S& s) { return V(s.skipped_unread); }},
      {"size_paired", Unit::kCount, "", [](const S& s) { return V(s.size_paired); }},
      {"skipped_inline", Unit::kCount, "skipped {} with inline data", [](const S& s) { return V(s.skipped_inline); }},
      {"unchanged_since", Unit::kFlag, "nothing changed since --since",
       [](const S& s) { return V(s.unchanged_since); }},
      {"since_listed", Unit::kFlag, "", [](const S& s) { return V(s.since_listed); }},
      {"since_left_out", Unit::kCount, "{} unchanged files sharing nothing with a changed one left out",
       [](const S& s) { return V(s.since_left_out); }},
  };
}

Figures<S> All() {
  Figures<S> t = Space();
  for (auto part : {Duplicates(), LeftOut()}) t.insert(t.end(), part.begin(), part.end());
  return t;
}

}  // namespace

const Figures<PlanStats>& PlanFigures() {
  static const Figures<PlanStats> table = All();
  return table;
}

const Figures<DiffStats>& DiffFigures() {
  using D = DiffStats;
  static const Figures<DiffStats> table = {
      {"added", Unit::kCount, "{} added,", [](const D& s) { return V(s.added); }, Place::kHead},
      {"removed", Unit::kCount, "{} removed,", [](const D& s) { return V(s.removed); }, Place::kHead},
      {"changed", Unit::kCount, "{} changed,", [](const D& s) { return V(s.changed); }, Place::kHead},
      {"renamed", Unit::kCount, "{} renamed,", [](const D& s) { return V(s.renamed); }, Place::kHead},
      {"unchanged", Unit::kCount, "{} unchanged", [](const D& s) { return V(s.unchanged); }, Place::kHead},
  };
  return table;
}

}  // namespace oans
