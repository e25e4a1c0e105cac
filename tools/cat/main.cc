// oans-cat FILE: print an extent index or a dedupe plan as JSON lines.

#include <cinttypes>
#include <cstdio>

#include "lib/base/heap.h"
#include "lib/base/json.h"
#include "lib/format/index_file.h"
#include "lib/format/kind.h"
#include "lib/format/plan_file.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/common/cli.h"

using namespace oans;

namespace {

std::string HashHex(const Hash128& h) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, h.hi, h.lo);
  return buf;
}

Json FsJson(const FsRecord& f) {
  Json j = Json::object();
  j["uuid"] = JsonText(f.uuid);
  j["subvolume"] = f.subvolume;
  j["dev"] = f.dev;
  j["type"] = JsonText(f.type);
  j["block_size"] = f.block_size;
  j["mount_point"] = JsonText(f.mount_point);
  j["subvolume_uuid"] = JsonText(f.subvolume_uuid);
  j["generation"] = f.generation;
  return j;
}

Json FsList(const std::vector<FsRecord>& v) {
  Json a = Json::array();
  for (const auto& f : v) a.push_back(FsJson(f));
  return a;
}

Json IndexHeaderJson(const IndexHeader& h) {
  Json j = Json::object();
  j["type"] = "index-header";
  j["format_version"] = h.format_version;
  j["tool_version"] = JsonText(h.tool_version);
  j["created_ns"] = h.created_ns;
  j["hostname"] = JsonText(h.hostname);
  j["roots"] = JsonTextArray(h.roots);
  j["filesystems"] = FsList(h.filesystems);
  j["block_size"] = h.block_size;
  j["min_size"] = h.min_size;
  j["excludes"] = JsonTextArray(h.excludes);
  j["command_line"] = JsonTextArray(h.command_line);
  j["directories"] = h.directories;
  j["followed_from"] = h.followed_from;
  j["same_as_followed"] = h.same_as_followed;
  j["mounts_below"] = h.mounts_below;
  j["read_data"] = h.read_data;
  j["spinning"] = h.spinning;
  j["owners"] = h.owners;
  if (h.changed_known) {
    Json changed = Json::array();
    for (const auto& [fs, ino] : h.changed_files) changed.push_back(Json{{"fs", fs}, {"ino", ino}});
    j["changed_files"] = std::move(changed);
    j["changed_at"] = h.changed_at;
  }
  return j;
}

Json FileJson(const FileEntry& e, bool blocks) {
  Json j = Json::object();
  j["type"] = "file";
  AddPath(j, "path", e.path);
  j["fs"] = e.fs;
  j["dev"] = e.dev;
  j["ino"] = e.ino;
  j["size"] = e.size;
  j["mtime_ns"] = e.mtime_ns;
  j["ctime_ns"] = e.ctime_ns;
  j["nlink"] = e.nlink;
  j["uid"] = e.uid;
  j["gid"] = e.gid;
  j["inode_flags"] = e.inode_flags;
  Json ext = Json::array();
  for (const auto& x : e.extents) ext.push_back(Json::array({x.logical, x.physical, x.length, x.flags}));
  j["extents"] = std::move(ext);
  if (e.hashed) {
    j["hash"] = HashHex(e.hash);
    j["block_count"] = e.block_hashes.size();
    if (e.reused) j["reused"] = true;
    j["key_kind"] = e.key_kind;
    if (e.sum_kind) j["sum_kind"] = e.sum_kind;
    if (blocks && !e.sector_sums.empty()) {
      static const char hex[] = "0123456789abcdef";
      std::string sums;
      for (unsigned char c : e.sector_sums) sums += {hex[c >> 4], hex[c & 15]};
      j["sector_sums"] = sums;  // 8 hex digits (4 bytes, little-endian) per 4 KiB sector
    }
    if (blocks) {
      Json b = Json::array();
      for (const auto& h : e.block_hashes) b.push_back(HashHex(h));
      j["blocks"] = std::move(b);
    }
  }
  if (!e.error.empty()) {
    j["error"] = JsonText(e.error);
    j["errno"] = e.errnum;
  }
  if (!e.other_paths.empty()) j["other_paths"] = JsonTextArray(e.other_paths);
  if (e.size_paired) j["size_paired"] = true;
  return j;
}

int CatIndex(const std::string& path, bool blocks, bool extents) {
  IndexReadOptions ro;
  ro.allow_truncated = true;
  if (extents)
    ro.on_extents = [](const IndexHeader&, const std::vector<IndexExtent>& batch) {
      for (const auto& x : batch)
        PrintJsonLine(stdout, Json{{"type", "extent"}, {"fs", x.fs}, {"bytenr", x.bytenr},
                                   {"disk_bytes", x.disk_bytes}, {"refs", x.refs}, {"ro_refs", x.ro_refs}});
      return Status::Ok();
    };
  ro.on_dirs = [](const IndexHeader&, std::vector<IndexDir>& dirs) {
    for (const auto& d : dirs) {
      Json j = Json::object();
      j["type"] = "dir";
      AddPath(j, "path", d.path);
      j["fs"] = d.fs;
      j["ino"] = d.ino;
      if (d.mtime_ns != 0 || d.ctime_ns != 0) {
        j["mtime_ns"] = d.mtime_ns;
        j["ctime_ns"] = d.ctime_ns;
      }
      PrintJsonLine(stdout, j);
    }
    return Status::Ok();
  };
  auto r = ReadIndex(
      path, ro,
      [](const IndexHeader& h) {
        PrintJsonLine(stdout, IndexHeaderJson(h));
        return Status::Ok();
      },
      [blocks](const IndexHeader&, std::vector<FileEntry>& batch) {
        for (const auto& e : batch) PrintJsonLine(stdout, FileJson(e, blocks));
        return Status::Ok();
      });
  if (!r.ok()) return cli::Fail("oans-cat", r.status());
  Json end = Json::object();
  end["type"] = "index-end";
  end["records"] = r->totals.records;
  end["dirs"] = r->totals.dirs;
  end["batches"] = r->totals.batches;
  end["errors"] = r->totals.errors;
  end["bytes"] = r->totals.bytes;
  end["sections"] = r->sections;
  end["complete"] = !r->truncated;
  PrintJsonLine(stdout, end);
  if (r->truncated) {
    std::fprintf(stderr, "oans-cat: warning: %s is incomplete (no trailer): the scan was interrupted\n", path.c_str());
    return cli::kPartial;
  }
  return cli::kOk;
}

Json PlanHeaderJson(const PlanHeader& h) {
  Json j = Json::object();
  j["type"] = "plan-header";
  j["format_version"] = h.format_version;
  j["tool_version"] = JsonText(h.tool_version);
  j["created_ns"] = h.created_ns;
  j["roots"] = JsonTextArray(h.roots);
  j["filesystems"] = FsList(h.filesystems);
  j["round_size"] = h.round_size;
  j["block_size"] = h.block_size;
  j["indexes"] = JsonTextArray(h.indexes);
  j["command_line"] = JsonTextArray(h.command_line);
  j["rounds"] = h.rounds;
  j["groups"] = h.groups;
  j["duplicate_bytes"] = h.duplicate_bytes;
  j["shared_bytes"] = h.shared_bytes;
  j["planned_bytes"] = h.planned_bytes;
  j["rewrite_bytes"] = h.rewrite_bytes;
  return j;
}

Json RoundJson(const PlanRound& r) {
  Json files = Json::array();
  for (const auto& f : r.files) {
    Json j = Json::object();
    AddPath(j, "path", f.path);
    j["fs"] = f.fs;
    j["dev"] = f.dev;
    j["ino"] = f.ino;
    j["size"] = f.size;
    j["mtime_ns"] = f.mtime_ns;
    j["nlink"] = f.nlink;
    if (!f.other_paths.empty()) {
      Json names = Json::array();
      for (const auto& p : f.other_paths) {
        Json n = Json::object();
        AddPath(n, "path", p);
        names.push_back(std::move(n));
      }
      j["other_paths"] = std::move(names);
    }
    if (f.unread) j["unread"] = true;
    files.push_back(std::move(j));
  }
  Json ops = Json::array();
  for (const auto& o : r.ops) {
    Json dests = Json::array();
    for (const auto& d : o.dests) {
      Json j{{"file", d.file}, {"offset", d.offset}, {"physical", d.physical}};
      if (IsRewrite(o, d)) j["rewrite"] = true;  // copied into a new extent first (format 2)
      dests.push_back(std::move(j));
    }
    ops.push_back(Json{{"source", o.source}, {"offset", o.offset}, {"length", o.length}, {"physical", o.physical},
                       {"dests", std::move(dests)}});
  }
  Json j = Json::object();
  j["type"] = "round";
  j["index"] = r.index;
  j["bytes"] = r.bytes;
  j["files"] = std::move(files);
  j["ops"] = std::move(ops);
  return j;
}

int CatPlan(const std::string& path) {
  auto p = PlanReader::Open(path);
  if (!p.ok()) return cli::Fail("oans-cat", p.status());
  PrintJsonLine(stdout, PlanHeaderJson((*p)->header()));
  PlanRound r;
  uint64_t rounds = 0;
  for (;;) {
    auto more = (*p)->Next(&r);
    if (!more.ok()) return cli::Fail("oans-cat", more.status());
    if (!*more) break;
    rounds++;
    PrintJsonLine(stdout, RoundJson(r));
  }
  PrintJsonLine(stdout, Json{{"type", "plan-end"}, {"rounds", rounds}, {"complete", true}});
  return cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  oans::SetUpHeap();
  CLI::App app{"Print an oans extent index or dedupe plan as JSON lines, one object per line:\n"
               "a header, then one line per file (index) or per round (plan), then an end line.\n"
               "\n"
               "Examples:\n"
               "  oans-cat data.idx | head                        the header and the first files\n"
               "  oans-cat --blocks data.idx                      with every block hash\n"
               "  oans-cat --extents data.idx                     with the btrfs data extents' references\n"
               "  oans-cat plan.capnp                             the plan's rounds and operations",
               "oans-cat"};
  app.set_version_flag("--version", ToolVersionString("oans-cat"));
  std::string path;
  bool blocks = false, extents = false;
  app.add_option("file", path, "Index or plan file ('-' for standard input)")->required()->type_name("FILE");
  app.add_flag("--blocks", blocks, "Include every block hash of index records");
  app.add_flag("--extents", extents,
               "Include the btrfs data extents the records point into, with their references, as "
               "{\"type\":\"extent\",\"fs\",\"bytenr\",\"disk_bytes\",\"refs\",\"ro_refs\"} lines");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (path == "-") {
    // Standard input may be either kind: keep a copy so it can be read twice.
    auto spooled = SpoolStdin();
    if (!spooled.ok()) return cli::Fail("oans-cat", spooled.status());
    path = *spooled;
  }
  // Both formats start with a header frame whose magic says which one this is.
  auto kind = DetectFileKind(path);
  if (!kind.ok()) return cli::Fail("oans-cat", kind.status());
  if (*kind == FileKind::kPlan) return CatPlan(path);
  return CatIndex(path, blocks, extents);
}
