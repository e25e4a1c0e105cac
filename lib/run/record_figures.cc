#include "lib/run/record_figures.h"

#include <string>

namespace oans {
namespace {

// A figure read from the record's field of its own name.
Figure<Json> Field(const char* name, Unit unit, const char* label) {
  const std::string key = name;
  return {name, unit, label, [key](const Json& g) { return g.contains(key) ? FigureFromJson(g[key]) : FigureValue(); }};
}

}  // namespace

const std::vector<RecordCopy>& RecordCopies() {
  static const std::vector<RecordCopy> copies = {
      {"files_scanned", "scan", "files"},
      {"files_read", "scan", "hashed"},
      {"bytes_planned", "plan", "planned_bytes"},
      {"bytes_deduped", "apply", "bytes_deduped"},
      {"bytes_linked", "apply", "bytes_linked"},
      {"bytes_skipped", "apply", "bytes_skipped"},
      {"skipped", "apply", "skipped"},
      {"data_freed_bytes", "apply", "data_freed_bytes"},
      {"metadata_grown_bytes", "apply", "metadata_grown_bytes"},
      {"net_freed_bytes", "apply", "net_freed_bytes"},
      {"space_approximate", "apply", "space_approximate"},
  };
  return copies;
}

const std::vector<const char*>& RecordCounted() {
  static const std::vector<const char*> counted = {"bytes_deduped", "bytes_linked", "bytes_freed"};
  return counted;
}

const Figures<Json>& RecordFigures() {
  static const Figures<Json> table = {
      Field("files_scanned", Unit::kCount, "{} files scanned"),
      Field("files_read", Unit::kCount, "{} files read"),
      Field("bytes_planned", Unit::kBytes, "planned {}"),
      Field("bytes_deduped", Unit::kBytes, "deduped {}"),
      Field("net_freed_bytes", Unit::kBytes, "net freed {}"),
      Field("space_approximate", Unit::kFlag, "approximate"),
      Field("bytes_linked", Unit::kBytes, "hardlinked {}"),
      Field("bytes_skipped", Unit::kBytes, ""),
      Field("skipped", Unit::kByReason, "skipped {}"),
      Field("data_freed_bytes", Unit::kBytes, ""),
      Field("metadata_grown_bytes", Unit::kBytes, ""),
      Field("bytes_freed", Unit::kBytes, ""),
      Field("bytes_deduped_total", Unit::kBytes, ""),
      Field("bytes_linked_total", Unit::kBytes, ""),
      Field("bytes_freed_total", Unit::kBytes, ""),
  };
  return table;
}

}  // namespace oans
