#include "lib/scan/dupe_list.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>

#include "lib/base/fd.h"
#include "lib/base/paths.h"
#include "lib/scan/entry.h"
#include "lib/scan/hasher.h"
#include "lib/format/index_file.h"
#include "lib/base/version.h"

namespace oans {

namespace {

// The groups of a list: paths, a blank line between groups.
Status ReadGroups(const std::string& list_path, std::vector<std::vector<std::string>>* groups) {
  std::ifstream in(list_path);
  if (!in) return Status::Io("opening " + list_path, errno);
  groups->resize(1);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (!groups->back().empty()) groups->emplace_back();
      continue;
    }
    groups->back().push_back(line);
  }
  if (in.bad()) return Status::Io("reading " + list_path, errno);
  return Status::Ok();
}

// The header's number of the filesystem of `path` (open as `fd`), added to the header on
// its first file; its root is made the directory all its listed files share.
// A listed file, open.
struct Listed {
  Sys& sys;
  int fd;
  const FileStat& st;
  const std::string& path;
};

uint32_t FilesystemOf(const Listed& f, IndexHeader* header, std::map<uint64_t, uint32_t>* fs_of_dev) {
  Sys& sys = f.sys;
  const int fd = f.fd;
  const FileStat& st = f.st;
  const std::string& path = f.path;
  auto it = fs_of_dev->find(st.dev);
  if (it == fs_of_dev->end()) {
    auto id = sys.Identify(fd);
    FsRecord r;
    r.uuid = id.ok() ? id->uuid : "unknown-dev-" + std::to_string(st.dev);
    r.subvolume = id.ok() ? id->subvolume : 0;
    r.type = id.ok() ? id->type : "";
    r.block_size = id.ok() ? id->block_size : 4096;
    r.dev = st.dev;
    header->filesystems.push_back(r);
    it = fs_of_dev->emplace(st.dev, uint32_t(header->filesystems.size() - 1)).first;
    header->roots.push_back(path.substr(0, path.rfind('/')));
  }
  // Each filesystem's root is the directory all its listed files share.
  std::string& root = header->roots[it->second];
  while (!(path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
           (root.empty() || path[root.size()] == '/')))
    root = root.substr(0, root.rfind('/'));
  return it->second;
}

// The record of a listed file, member of group `g`, the `serial`th file recorded.
FileEntry ListedEntry(const Listed& f, uint32_t fs, size_t g, uint64_t serial, uint32_t block_size) {
  FileEntry e = EntryOf(WalkEntry{f.path, f.st}, fs);
  std::vector<FiemapExtent> ext;
  if (f.sys.Fiemap(f.fd, &ext).ok()) e.extents = std::move(ext);
  // The group hash makes the group; the size keeps differently sized members apart.
  std::string key = "group " + std::to_string(g) + " size " + std::to_string(e.size);
  e.hash = HashBytes(key.data(), key.size());
  // Block hashes no other file has: the list says nothing about partial duplicates.
  for (uint64_t b = 0; b < (e.size + block_size - 1) / block_size; ++b) {
    std::string k = "block " + std::to_string(serial) + " " + std::to_string(b);
    e.block_hashes.push_back(HashBytes(k.data(), k.size()));
  }
  e.hashed = true;
  return e;
}

}  // namespace

Status IndexFromDuplicateList(Sys& sys, const DupeList& list, OutputFile* out, Observer* observer,
                              DupeListStats* stats) {
  const std::string& list_path = list.path;
  const uint32_t block_size = list.block_size;
  // Read every group first: the header must name every filesystem.
  std::vector<std::vector<std::string>> groups;
  OANS_RETURN_IF_ERROR(ReadGroups(list_path, &groups));
  IndexHeader header;
  header.tool_version = ToolVersion();
  header.created_ns = NowNs();
  header.block_size = block_size;
  header.command_line = {"duplicate list", list_path};
  std::map<uint64_t, uint32_t> fs_of_dev;
  std::set<std::pair<uint64_t, uint64_t>> seen;  // (dev, inode) of the files recorded
  std::vector<FileEntry> entries;
  uint64_t serial = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() < 2) continue;
    stats->groups++;
    for (const auto& path : groups[g]) {
      auto skip = [&](const std::string& why) {
        stats->skipped++;
        observer->Notice(path + ": skipped, " + why);
      };
      if (path.empty() || path[0] != '/') {
        skip("not an absolute path");
        continue;
      }
      if (!CleanAbsolutePath(path)) {  // an index reader would call it damage
        skip("a path with an empty, \".\" or \"..\" component; list the file by its plain path");
        continue;
      }
      auto fd = Own(sys, sys.OpenNoFollow(path));
      if (!fd.ok()) {
        skip(fd.status().message());
        continue;
      }
      auto st = sys.Fstat(fd->get());
      if (st.ok() && S_ISREG(st->mode) && st->size > 0 && !seen.insert({st->dev, st->ino}).second) {
        // A hardlink of a file listed before: one record per inode, as a scan writes.
        skip("the same file as a path listed before (the same path again, or a hardlink)");
      } else if (st.ok() && S_ISREG(st->mode) && st->size > 0) {
        const Listed f{sys, fd->get(), *st, path};
        const uint32_t fs = FilesystemOf(f, &header, &fs_of_dev);
        entries.push_back(ListedEntry(f, fs, g, serial, block_size));
        serial++;
        stats->files++;
      } else {
        skip(st.ok() ? "not a non-empty regular file" : st.status().message());
      }
    }
  }
  if (header.filesystems.empty()) {
    FsRecord r;
    r.uuid = "none";
    header.filesystems.push_back(r);
  }
  for (auto& r : header.roots)
    if (r.empty()) r = "/";
  IndexWriter writer(out);
  OANS_RETURN_IF_ERROR(writer.WriteHeader(header));
  for (auto& e : entries) OANS_RETURN_IF_ERROR(writer.Add(std::move(e)));
  return writer.Finish();
}

}  // namespace oans
