// oans-cat FILE: print an extent index or a dedupe plan as JSON lines.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "lib/format/index_file.h"
#include "lib/base/json.h"
#include "lib/format/plan_file.h"
#include "lib/base/version.h"
#include "tools/common/cli.h"

using namespace oans;

namespace {

std::string HashHex(const Hash128& h) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, h.hi, h.lo);
  return buf;
}

std::string FsJson(const FsRecord& f) {
  return "{\"uuid\":" + JsonString(f.uuid) + ",\"subvolume\":" + std::to_string(f.subvolume) +
         ",\"dev\":" + std::to_string(f.dev) + ",\"type\":" + JsonString(f.type) +
         ",\"block_size\":" + std::to_string(f.block_size) + ",\"mount_point\":" + JsonString(f.mount_point) +
         ",\"subvolume_uuid\":" + JsonString(f.subvolume_uuid) + ",\"generation\":" + std::to_string(f.generation) + "}";
}

template <typename T>
std::string List(const std::vector<T>& v, std::string (*f)(const T&)) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + f(v[i]);
  return s + "]";
}
std::string Str(const std::string& s) { return JsonString(s); }

int CatIndex(const std::string& path, bool blocks) {
  IndexReadOptions ro;
  ro.allow_truncated = true;
  auto r = ReadIndex(
      path, ro,
      [](const IndexHeader& h) {
        std::printf("{\"type\":\"index-header\",\"format_version\":%u,\"tool_version\":%s,\"created_ns\":%lld,"
                    "\"hostname\":%s,\"roots\":%s,\"filesystems\":%s,\"block_size\":%u,\"min_size\":%llu,"
                    "\"excludes\":%s,\"command_line\":%s}\n",
                    h.format_version, JsonString(h.tool_version).c_str(), (long long)h.created_ns,
                    JsonString(h.hostname).c_str(), List(h.roots, Str).c_str(), List(h.filesystems, FsJson).c_str(),
                    h.block_size, (unsigned long long)h.min_size, List(h.excludes, Str).c_str(),
                    List(h.command_line, Str).c_str());
        return Status::Ok();
      },
      [blocks](const IndexHeader&, std::vector<FileEntry>& batch) {
        for (const auto& e : batch) {
          std::string ext = "[";
          for (size_t i = 0; i < e.extents.size(); ++i) {
            const auto& x = e.extents[i];
            ext += std::string(i ? "," : "") + "[" + std::to_string(x.logical) + "," + std::to_string(x.physical) + "," +
                   std::to_string(x.length) + "," + std::to_string(x.flags) + "]";
          }
          ext += "]";
          std::string line = "{\"type\":\"file\"," + JsonPath("path", e.path) + ",\"fs\":" + std::to_string(e.fs) +
                             ",\"dev\":" + std::to_string(e.dev) + ",\"ino\":" + std::to_string(e.ino) +
                             ",\"size\":" + std::to_string(e.size) + ",\"mtime_ns\":" + std::to_string(e.mtime_ns) +
                             ",\"ctime_ns\":" + std::to_string(e.ctime_ns) + ",\"nlink\":" + std::to_string(e.nlink) +
                             ",\"inode_flags\":" + std::to_string(e.inode_flags) + ",\"extents\":" + ext;
          if (e.hashed) {
            line += ",\"hash\":\"" + HashHex(e.hash) + "\",\"block_count\":" + std::to_string(e.block_hashes.size());
            if (e.reused) line += ",\"reused\":true";
            if (blocks) {
              line += ",\"blocks\":[";
              for (size_t i = 0; i < e.block_hashes.size(); ++i)
                line += std::string(i ? "," : "") + "\"" + HashHex(e.block_hashes[i]) + "\"";
              line += "]";
            }
          }
          if (!e.error.empty()) line += ",\"error\":" + JsonString(e.error) + ",\"errno\":" + std::to_string(e.errnum);
          if (!e.other_paths.empty()) line += ",\"other_paths\":" + List(e.other_paths, Str);
          std::printf("%s}\n", line.c_str());
        }
        return Status::Ok();
      });
  if (!r.ok()) return cli::Fail("oans-cat", r.status());
  std::printf("{\"type\":\"index-end\",\"records\":%llu,\"batches\":%llu,\"errors\":%llu,\"bytes\":%llu,"
              "\"sections\":%d,\"complete\":%s}\n",
              (unsigned long long)r->totals.records, (unsigned long long)r->totals.batches,
              (unsigned long long)r->totals.errors, (unsigned long long)r->totals.bytes, r->sections,
              r->truncated ? "false" : "true");
  if (r->truncated) {
    std::fprintf(stderr, "oans-cat: warning: %s is incomplete (no trailer): the scan was interrupted\n", path.c_str());
    return cli::kPartial;
  }
  return cli::kOk;
}

int CatPlan(const std::string& path) {
  auto p = PlanReader::Open(path);
  if (!p.ok()) return cli::Fail("oans-cat", p.status());
  const PlanHeader& h = (*p)->header();
  std::printf("{\"type\":\"plan-header\",\"format_version\":%u,\"tool_version\":%s,\"created_ns\":%lld,\"roots\":%s,"
              "\"filesystems\":%s,\"round_size\":%llu,\"block_size\":%u,\"indexes\":%s,\"command_line\":%s,"
              "\"rounds\":%llu,\"groups\":%llu,\"duplicate_bytes\":%llu,\"shared_bytes\":%llu,\"planned_bytes\":%llu}\n",
              h.format_version, JsonString(h.tool_version).c_str(), (long long)h.created_ns, List(h.roots, Str).c_str(),
              List(h.filesystems, FsJson).c_str(), (unsigned long long)h.round_size, h.block_size,
              List(h.indexes, Str).c_str(), List(h.command_line, Str).c_str(), (unsigned long long)h.rounds,
              (unsigned long long)h.groups, (unsigned long long)h.duplicate_bytes, (unsigned long long)h.shared_bytes,
              (unsigned long long)h.planned_bytes);
  PlanRound r;
  uint64_t rounds = 0;
  for (;;) {
    auto more = (*p)->Next(&r);
    if (!more.ok()) return cli::Fail("oans-cat", more.status());
    if (!*more) break;
    rounds++;
    std::string files = "[";
    for (size_t i = 0; i < r.files.size(); ++i) {
      const auto& f = r.files[i];
      files += std::string(i ? "," : "") + "{" + JsonPath("path", f.path) + ",\"fs\":" + std::to_string(f.fs) +
               ",\"dev\":" + std::to_string(f.dev) + ",\"ino\":" + std::to_string(f.ino) +
               ",\"size\":" + std::to_string(f.size) + ",\"mtime_ns\":" + std::to_string(f.mtime_ns) + "}";
    }
    std::string ops = "[";
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const auto& o = r.ops[i];
      ops += std::string(i ? "," : "") + "{\"source\":" + std::to_string(o.source) + ",\"offset\":" +
             std::to_string(o.offset) + ",\"length\":" + std::to_string(o.length) +
             ",\"physical\":" + std::to_string(o.physical) + ",\"dests\":[";
      for (size_t j = 0; j < o.dests.size(); ++j)
        ops += std::string(j ? "," : "") + "{\"file\":" + std::to_string(o.dests[j].file) +
               ",\"offset\":" + std::to_string(o.dests[j].offset) +
               ",\"physical\":" + std::to_string(o.dests[j].physical) + "}";
      ops += "]}";
    }
    std::printf("{\"type\":\"round\",\"index\":%llu,\"bytes\":%llu,\"files\":%s],\"ops\":%s]}\n",
                (unsigned long long)r.index, (unsigned long long)r.bytes, files.c_str(), ops.c_str());
  }
  std::printf("{\"type\":\"plan-end\",\"rounds\":%llu,\"complete\":true}\n", (unsigned long long)rounds);
  return cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Print an oans extent index or dedupe plan as JSON lines, one object per line:\n"
               "a header, then one line per file (index) or per round (plan), then an end line.\n"
               "Examples:\n"
               "  oans-cat data.idx | head                        the header and the first files\n"
               "  oans-cat --blocks data.idx                      with every block hash\n"
               "  oans-cat plan.capnp                             the plan's rounds and operations",
               "oans-cat"};
  app.set_version_flag("--version", ToolVersionString("oans-cat"));
  std::string path;
  bool blocks = false;
  app.add_option("file", path, "Index or plan file ('-' for standard input)")->required()->type_name("FILE");
  app.add_flag("--blocks", blocks, "Include every block hash of index records");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (path == "-") {
    // Standard input may be either kind: keep a copy so it can be read twice.
    auto spooled = SpoolStdin();
    if (!spooled.ok()) return cli::Fail("oans-cat", spooled.status());
    path = *spooled;
  }
  // Both formats start with a header frame; the index reader names a plan when it meets one.
  {
    IndexReadOptions ro;
    ro.allow_truncated = true;
    bool is_plan = false;
    auto probe = ReadIndex(
        path, ro, [](const IndexHeader&) { return Status::Interrupted("probe"); },
        [](const IndexHeader&, std::vector<FileEntry>&) { return Status::Ok(); });
    if (!probe.ok() && probe.status().message().find("is a dedupe plan") != std::string::npos) is_plan = true;
    if (is_plan) return CatPlan(path);
  }
  return CatIndex(path, blocks);
}
