#include "tools/plan/report.h"

#include <unistd.h>

#include <cerrno>

#include "lib/base/json.h"
#include "lib/base/spill.h"
#include "lib/base/units.h"
#include "tools/common/cli.h"

namespace oans::cli {
namespace {

// fdupes lists are read by other tools that know no escapes: a name with a newline
// cannot be written there, so it is left out (and named on stderr).
size_t PrintFdupes(FILE* f, const GroupReport& g) {
  std::vector<const std::string*> names{&g.source};
  size_t left_out = 0;
  for (const auto& d : g.dests) names.push_back(&d);
  std::vector<const std::string*> kept;
  for (const std::string* p : names) {
    if (p->find('\n') == std::string::npos) {
      kept.push_back(p);
      continue;
    }
    ++left_out;
    std::fprintf(stderr, "oans-plan: left out of the fdupes list (its name has a newline, which would start a new "
                         "line there; --format json or text show it): %s\n", cli::EscapeLine(*p).c_str());
  }
  if (kept.size() < 2) return left_out;
  for (const std::string* p : kept) std::fprintf(f, "%s\n", p->c_str());
  std::fprintf(f, "\n");
  return left_out;
}

// Returns how many files were left out of an fdupes list.
}  // namespace

size_t PrintReport(FILE* f, const std::string& format, const std::vector<GroupReport>& groups) {
  size_t left_out = 0;
  for (const auto& g : groups) {
    if (format == "fdupes") {
      left_out += PrintFdupes(f, g);
    } else if (format == "json") {
      Json files = Json::array();
      Json source = Json::object();
      AddPath(source, "path", g.source);
      source["source"] = true;
      files.push_back(std::move(source));
      for (size_t i = 0; i < g.dests.size(); ++i) {
        Json dest = Json::object();
        AddPath(dest, "path", g.dests[i]);
        dest["already_shared"] = bool(g.dest_shared[i]);
        files.push_back(std::move(dest));
      }
      PrintJsonLine(f, Json{{"size", g.size}, {"files", std::move(files)}});
    } else {
      size_t shared = 0;
      for (bool b : g.dest_shared) shared += b;
      std::fprintf(f, "%zu files of %s each; %zu already share the source's data\n", g.dests.size() + 1,
                   FormatSize(g.size).c_str(), shared);
      std::fprintf(f, "  %s (source)\n", cli::EscapeLine(g.source).c_str());
      for (size_t i = 0; i < g.dests.size(); ++i)
        std::fprintf(f, "  %s%s\n", cli::EscapeLine(g.dests[i]).c_str(), g.dest_shared[i] ? " (shared)" : "");
      std::fprintf(f, "\n");
    }
  }
  return left_out;
}

// Writes the report to standard output, or to FILE through OutputFile (never through a
// symlink, replaced whole).
// Writes a report through `print` (which returns the names it had to leave out) to
// standard output or, atomically, to `output`.
Status WriteReport(const std::string& output, const std::function<size_t(FILE*)>& print, size_t* left_out) {
  if (output == "-") {
    *left_out = print(stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) return Status::Io("writing the report", errno);
    return Status::Ok();
  }
  auto out = OutputFile::Open(output);
  if (!out.ok()) return out.status();
  int fd = ::dup((*out)->fd());
  FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "w");
  if (!f) return Status::Io("writing " + output, errno);
  *left_out = print(f);
  bool bad = std::fflush(f) != 0 || std::ferror(f);
  int e = errno;
  if (std::fclose(f) != 0 && !bad) bad = true, e = errno;
  if (bad) return Status::Io("writing " + output, e);
  return (*out)->Commit();
}

}  // namespace oans::cli
