// oans-scan ROOT...: walk the roots and write an extent index (see docs/format.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "lib/base/fd.h"
#include "lib/base/fsinfo.h"
#include "lib/scan/scan.h"
#include "lib/scan/scan_figures.h"
#include "lib/scan/walk.h"
#include "lib/base/heap.h"
#include "lib/base/sys.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/common/cli.h"
#include "tools/common/progress.h"
#include "tools/common/summary.h"

using namespace oans;

// Says once per filesystem when a root's cannot share data (lib/base/fsinfo.h).
// The scan goes on: its index serves reports, and hardlinks.
void NoticeNoReflink(const std::vector<std::string>& roots, Observer* observer) {
  std::set<dev_t> seen;
  for (const auto& r : roots) {
    const Fd fd(::open(r.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) continue;
    struct stat st;
    const std::string what = ::fstat(fd.get(), &st) == 0 && seen.insert(st.st_dev).second ? NoReflinkOn(fd.get()) : "";
    if (!what.empty())
      observer->Notice(r + " is on " + what + ", which cannot share data between files: only hardlinks can dedupe "
                       "it (oans-apply --link=hard)");
  }
}

namespace {

// The command line: the library's options and what only the tool needs.
struct Args {
  ScanOptions o;
  std::string output = "-";
  std::string storage = "auto", order = "auto", progress = "auto", pair_by_size = "auto";
  std::string previous_damaged = "refuse";
  std::string summary_file;
  std::vector<std::string> presets;  // --exclude-preset
  size_t given_excludes = 0;         // o.excludes from --exclude, before the presets' globs
  bool quiet = false, json = false;
  uint64_t block_size = ScanOptions().block_size;
};

void AddOptions(CLI::App& app, Args& a) {
  ScanOptions& o = a.o;
  std::string &output = a.output, &storage = a.storage, &order = a.order, &progress = a.progress,
              &previous_damaged = a.previous_damaged;
  bool &quiet = a.quiet, &json = a.json;
  uint64_t& block_size = a.block_size;
  app.add_option("roots", o.roots, "Directories (or files) to scan")->required()->type_name("ROOT");
  app.add_option("-o,--output", output, "Write the index to FILE (atomically) instead of standard output")
      ->type_name("FILE");
  app.add_option("--previous", o.previous,
                 "Reuse hashes from an earlier index for files whose identity (inode, size, mtime, ctime) is "
                 "unchanged; an interrupted index is accepted (its complete batches), a damaged one is not (see "
                 "--previous-damaged). On btrfs, run as root, files whose metadata btrfs "
                 "has not written since that index are not even opened")
      ->type_name("FILE");
  app.add_option("--previous-damaged", previous_damaged,
                 "What to do when the --previous index is damaged (a batch failing its checksum or not parsing, as "
                 "opposed to cut short by an interrupted scan): refuse (default: exit 2, naming the file and the "
                 "byte offset) or rescan (warn, reuse nothing from it and read every file)")
      ->check(CLI::IsMember({"refuse", "rescan"}));
  app.add_flag("--refresh-extents", o.refresh_extents,
               "With --previous: map every file's extents again (FIEMAP), even those btrfs says are unchanged");
  app.add_flag("--read-data", o.read_data,
               "Open every file and read its data to hash it, as on other filesystems, even on btrfs where files "
               "are otherwise mapped from the filesystem's trees, unopened, and the sums of their 4 KiB sectors "
               "taken from its checksum tree (as root, after a syncfs)");
  app.add_flag("--whole-files-only", o.whole_files_only,
               "Only whole files will be shared (oans-apply --link=hard, oans-plan --whole-files-only): where no "
               "btrfs checksums key the files (ext4, XFS, --read-data), a file whose size no other file has is "
               "recorded unread and never opened, and two files of one size are mapped but not read (apply's "
               "compare reads them; see --pair-by-size)");
  app.add_option("--pair-by-size", a.pair_by_size,
                 "Where no btrfs checksums key the files (ext4, XFS, --read-data): auto, always or never map two "
                 "files of one size without reading them (the plan pairs them whole; apply's compare reads them "
                 "once). auto (default): with --whole-files-only only. always: in every mode, but outside "
                 "--whole-files-only only in a scan without --previous: the next scan, given its index, reads them "
                 "for their partial duplicates (it pays where most such pairs are copies). never: read them. "
                 "Pairing keeps the walk's list of files in memory until the walk ends")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cli::AddSize(app, "--block-size", &block_size, "Bytes per block hash, a multiple of 4K (default 128K)");
  cli::AddSize(app, "--min-size", &o.min_size, "Skip files smaller than SIZE (default: keep every non-empty file)");
  app.add_option("--exclude", o.excludes,
                 "Skip paths matching GLOB: with a '/', the path below each root (photos/@eaDir), or the whole "
                 "path when GLOB starts with '/' or '*'; without, each name (*.tmp); repeatable. A GLOB that "
                 "matched nothing is named in a warning")
      ->type_name("GLOB")
      ->allow_extra_args(false);  // one GLOB per --exclude, so roots can follow
  app.add_option("--exclude-preset", a.presets,
                 "Skip the names of a preset: nas (@eaDir, #recycle, #snapshot, .snapshots, .Trash-*: the metadata, "
                 "recycle bins and snapshot directories of NAS systems and desktops); repeatable")
      ->type_name("NAME")
      ->allow_extra_args(false);
  app.add_option("--io-threads", o.io_threads, "Reader threads (default: 8 on SSD, 1 on HDD); on SSD also the btrfs tree blocks a followed scan reads at once (default 16, at most 32)")
      ->check(CLI::Range(1, 256));
  app.add_option("--storage", storage,
                 "Storage kind: auto, ssd or hdd (default auto: sysfs plus a seek test; with --previous, what the "
                 "previous index says); on hdd, btrfs's trees are first read in disk order, up to --memory, and the "
                 "index says so, for oans-plan's larger rounds")
      ->check(CLI::IsMember({"auto", "ssd", "hdd"}));
  app.add_option("--order", order, "Read order: auto, physical, inode or none (default: physical on HDD; none on SSD: files are read "
                 "as the walk finds them, in parallel, in flat memory)")
      ->check(CLI::IsMember({"auto", "physical", "inode", "none"}));
  cli::AddSize(app, "--memory", &o.memory,
               "Memory for the --previous index's records (default 512M, at least 16M); past it they go to an "
               "unnamed file in --temp-dir, and 24 bytes a file stay in memory. Also bounds the trees read ahead "
               "on hdd");
  app.add_option("--temp-dir", o.temp_dir,
                 "Directory for the unnamed spool of records finished during the walk and the --previous records "
                 "past --memory (default $TMPDIR, else /var/tmp; about 60 bytes per file for the spool, and 80 "
                 "bytes or more per file of --previous past --memory)")
      ->type_name("DIR");
  app.add_option("--progress", progress, "Progress on stderr: auto (terminal only), tty, json or none")
      ->check(CLI::IsMember({"auto", "tty", "json", "none"}));
  app.add_flag("-q,--quiet", quiet, "Print only errors");
  app.add_flag("--json", json, cli::kJsonHelp);
  cli::AddSummaryFile(app, &a.summary_file);
  app.footer(cli::ExitCodesHelp());
}

// Checks what the parse could not, and completes the library's options.
// Returns -1 to go on, or the exit code.
int Complete(Args& a, int argc, char** argv) {
  ScanOptions& o = a.o;
  const std::string &storage = a.storage, &order = a.order, &previous_damaged = a.previous_damaged;
  const uint64_t block_size = a.block_size;
  if (o.memory < (16u << 20)) return cli::Fail("oans-scan", "--memory must be at least 16M");
  o.previous_damaged_rescan = previous_damaged == "rescan";
  o.block_size = uint32_t(block_size);
  if (block_size != o.block_size) return cli::Fail("oans-scan", "--block-size is too large");
  o.storage = storage == "ssd" ? StorageChoice::kSsd : storage == "hdd" ? StorageChoice::kHdd : StorageChoice::kAuto;
  o.order = order == "physical" ? ReadOrder::kPhysical
            : order == "inode"  ? ReadOrder::kInode
            : order == "none"   ? ReadOrder::kNone
                                : ReadOrder::kAuto;
  o.pair_by_size = a.pair_by_size == "always"  ? PairBySize::kAlways
                   : a.pair_by_size == "never" ? PairBySize::kNever
                                               : PairBySize::kAuto;
  o.command_line = cli::Argv(argc, argv);
  a.given_excludes = o.excludes.size();
  for (const auto& name : a.presets) {
    auto globs = ExcludePreset(name);
    if (!globs.ok()) return cli::Fail("oans-scan", globs.status());
    for (const auto& g : *globs)
      if (std::find(o.excludes.begin(), o.excludes.end(), g) == o.excludes.end()) o.excludes.push_back(g);
  }
  return -1;
}

// Names each --exclude GLOB that excluded nothing in the walk (a followed scan, which
// walks nothing, cannot tell). The presets' globs are not named.
std::vector<std::string> UnmatchedExcludes(const Args& a, const ScanStats& stats) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.given_excludes && i < stats.exclude_hits.size(); ++i)
    if (stats.exclude_hits[i] == 0) out.push_back(a.o.excludes[i]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  oans::SetUpHeap();
  CLI::App app{
      "Walk ROOT... (staying on each root's filesystem) and write an extent index: every regular\n"
      "file's identity, FIEMAP extents and XXH3-128 hashes of the whole file and of each block.\n"
      "Symlinks are not followed; special files are skipped; hardlinked files are read once.\n"
      "Files that vanish or cannot be read are recorded as errors and the walk goes on.\n"
      "\n"
      "Examples:\n"
      "  oans-scan /srv/data | oans-plan > plan.capnp      scan and plan in one pipe\n"
      "  oans-scan -o data.idx /srv/data /home             an index of two trees\n"
      "  oans-scan --previous data.idx -o new.idx /srv/data   read only what changed\n"
      "  oans-scan --whole-files-only -o data.idx /srv/ext4   read only files whose size two others have\n"
      "  oans-scan --exclude '*.tmp' --min-size 64K -o data.idx /srv/data   no *.tmp, nothing under 64K\n"
      "  oans-scan --exclude-preset nas --exclude photos/cache -o data.idx /srv/data   NAS metadata and\n"
      "                                                    ROOT/photos/cache left out\n"
      "  oans run /srv/data                                scan, plan and apply in generations",
      "oans-scan"};
  app.set_version_flag("--version", ToolVersionString("oans-scan"));
  Args a;
  AddOptions(app, a);
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  if (int rc = Complete(a, argc, argv); rc >= 0) return rc;
  ScanOptions& o = a.o;
  // A check of the census (docs/format.md): every extent's references by LOGICAL_INO.
  if (const char* env = std::getenv("OANS_CENSUS_LOOK_UP_ALL")) o.census_look_up_all = std::string(env) == "1";
  std::atomic<bool> stop{false};
  o.stop = &stop;
  cli::InstallSignalHandlers(&stop);
  cli::RaiseFileLimit();

  auto out = OutputFile::Open(a.output);
  if (!out.ok()) return cli::Fail("oans-scan", out.status());
  cli::ProgressMode mode;
  cli::ParseProgressMode(a.progress, &mode);
  cli::ProgressRenderer renderer("oans-scan", mode, a.quiet);
  ScanStats stats;
  NoticeNoReflink(o.roots, &renderer);
  Status st = RunScan(DefaultSys(), o, out->get(), &renderer, &stats);
  for (const auto& g : UnmatchedExcludes(a, stats))
    renderer.Notice("warning: --exclude '" + g + "' matched nothing" +
                    (g.find('/') != std::string::npos && g[0] != '/' && g[0] != '*' ? " below the roots" : "") +
                    " (with a '/' a glob is matched against the path below each root, without against each name)");
  renderer.Finish();
  if (!st.ok() && st.code() != Status::Code::kInterrupted) return cli::Fail("oans-scan", st);
  if (st.code() == Status::Code::kInterrupted && stats.not_followed == NoFollow::kStopped) {
    // A followed scan writes at its end: stopped before, it wrote nothing to keep.
    std::fprintf(stderr,
                 "oans-scan: stopped while following btrfs changes; %s was not written. Run the scan again "
                 "with the same --previous.\n",
                 (*out)->name().c_str());
    return cli::kStopped;
  }
  if (st.code() == Status::Code::kInterrupted) {
    // Keep what was written: an index without a trailer, usable with --previous.
    Status c = (*out)->Commit();
    std::fprintf(stderr,
                 "oans-scan: interrupted after %llu files; %s holds them without a trailer. Run the scan again "
                 "with --previous %s to reuse them.\n",
                 (unsigned long long)stats.files, (*out)->name().c_str(), (*out)->name().c_str());
    if (!c.ok()) return cli::Fail("oans-scan", c);
    return cli::kStopped;
  }
  if (Status c = (*out)->Commit(); !c.ok()) return cli::Fail("oans-scan", c);
  stats.seconds = renderer.ElapsedSeconds();
  cli::EmitFigures({.tool = "oans-scan", .summary_file = a.summary_file, .json = a.json, .text = !a.quiet,
                    .stdout_has_output = a.output == "-"},
                   ScanFigures(), stats);
  return stats.errors ? cli::kPartial : cli::kOk;
}
