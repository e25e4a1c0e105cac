// oans-gen-index: writes a synthetic extent index, in the real format (through
// IndexWriter), for planner tests and scale benchmarks. No filesystem is involved: sizes,
// extents and hashes are drawn from a seeded generator, so a given command line always
// produces the same bytes. Records are streamed; memory does not grow with --files.
//
// The model:
//   - one btrfs-like filesystem (UUID derived from --seed, subvolume 5, block size 4096);
//   - paths /srv/archive/groupNNN/projectNNNNN/runNNN/WORD_NNNNNNNNN.EXT (60-70 bytes),
//     50 files per directory, sequential inode numbers in path order;
//   - sizes: log-normal with mean --mean-size and standard deviation --size-spread of
//     ln(size), between 1 byte and --max-blocks blocks of --block-size;
//   - files of at most --max-inline bytes are inline (one DATA_INLINE extent, as btrfs
//     reports them); the others have one extent, or up to three (and at least one per
//     128 MiB) above 1 MiB, at increasing physical addresses with small gaps between
//     them; the last extent has FIEMAP_EXTENT_LAST, no other flag is set;
//   - exactly round(files x --dup-ratio) files are whole-file copies of an earlier
//     original (same size, hash and block hashes, own inode and path) picked among the
//     last 65536 originals; round(copies x --shared-ratio) of them already share the
//     original's extents (same physical addresses), the others have their own;
//   - exactly round(files x --partial-ratio) files share a run of whole blocks with an
//     earlier original of at least one block, at a block offset of their own, and have
//     data of their own before (0 to 2 blocks) and after it (at least 1 byte);
//   - all other files are originals with unique hashes. File 0 is always an original.
// Copies and partial files are spread at random over the index. A copy of an inline
// file is inline too and is never counted as shared.
#include <cinttypes>
#include <cmath>
#include <numbers>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/base/units.h"
#include "lib/base/version.h"
#include "lib/format/versions.h"
#include "tools/common/cli.h"

using namespace oans;

namespace {

constexpr uint64_t kFirstPhysical = 13631488;  // where btrfs places its first data chunk
constexpr uint64_t kSector = 4096;
constexpr uint64_t kMaxExtent = 128u << 20;   // btrfs's largest uncompressed extent
constexpr uint64_t kFilesPerDir = 50, kDirsPerProject = 40, kProjectsPerGroup = 100;
constexpr size_t kWindow = 65536;             // originals a copy may choose from
constexpr int64_t kBaseTimeNs = 1700000000LL * 1000000000LL;  // 2023-11-14
constexpr uint32_t kFlagLast = 0x1, kFlagNotAligned = 0x100, kFlagInline = 0x200;

uint64_t Mix(uint64_t x) {  // the splitmix64 finalizer: a bijection with good avalanche
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(Mix(seed ^ 0x6a09e667f3bcc909ULL)) {}
  uint64_t Next() { return Mix(s_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return uint64_t((unsigned __int128)Next() * n >> 64); }
  double Unit() { return double(Next() >> 11) * 0x1.0p-53; }
  double Normal() {  // Box-Muller; both uniforms from this stream, so it is reproducible
    double u = 1.0 - Unit(), v = Unit();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
  }

 private:
  uint64_t s_;
};

// Content is named by a 64-bit id; hashes are derived from it, so identical content has
// identical hashes and nothing but the id needs to be remembered.
Hash128 WholeHash(uint64_t id) { return {Mix(id ^ 0x243f6a8885a308d3ULL), Mix(id ^ 0x13198a2e03707344ULL)}; }
Hash128 BlockHash(uint64_t id, uint64_t block) {
  return {Mix(Mix(id ^ 0xa4093822299f31d0ULL) + block), Mix(Mix(id ^ 0x082efa98ec4e6c89ULL) + block)};
}

struct Original {
  uint64_t id = 0, size = 0;
  std::vector<FiemapExtent> extents;
  bool inline_data = false;
  bool copied = false;
};

// A fixed-capacity ring: the newest kWindow items.
template <typename T>
class Window {
 public:
  bool empty() const { return items_.empty(); }
  T& Pick(Rng& rng) { return items_[rng.Below(items_.size())]; }
  void Add(T item) {
    if (items_.size() < kWindow) {
      items_.push_back(std::move(item));
    } else {
      items_[next_] = std::move(item);
      next_ = (next_ + 1) % kWindow;
    }
  }

 private:
  std::vector<T> items_;
  size_t next_ = 0;
};

struct BlockSource {  // an original of at least one whole block
  uint64_t id = 0, size = 0;
};

// "10000", "10k", "1M", "2G": decimal multiples, nothing else.
Result<uint64_t> ParseCount(const std::string& text) {
  const Status bad = Status::Invalid("'" + text + "': expected a count such as 10000, 100k or 10M");
  size_t digits = 0;
  uint64_t n = 0;
  for (; digits < text.size() && text[digits] >= '0' && text[digits] <= '9'; ++digits) {
    if (n > (UINT64_MAX - 9) / 10) return bad;
    n = n * 10 + uint64_t(text[digits] - '0');
  }
  if (digits == 0 || text.size() > digits + 1) return bad;
  uint64_t mult = 1;
  if (text.size() == digits + 1) {
    switch (text[digits]) {
      case 'k': case 'K': mult = 1000; break;
      case 'm': case 'M': mult = 1000000; break;
      case 'g': case 'G': mult = 1000000000; break;
      default: return bad;
    }
  }
  if (n > UINT64_MAX / mult) return bad;
  return n * mult;
}

CLI::Option* AddCount(CLI::App& app, const std::string& name, uint64_t* out, const std::string& desc) {
  auto* opt = app.add_option_function<std::string>(
      name,
      [out, name](const std::string& v) {
        auto r = ParseCount(v);
        if (!r.ok()) throw CLI::ValidationError(name, r.status().message());
        *out = *r;
      },
      desc);
  opt->type_name("N");
  return opt;
}

std::string Uuid(uint64_t seed) {
  uint64_t a = Mix(seed ^ 0x3c6ef372fe94f82bULL), b = Mix(seed ^ 0xa54ff53a5f1d36f1ULL);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-%04" PRIx64 "-%012" PRIx64, a >> 32,
                (a >> 16) & 0xffff, a & 0xfff, uint64_t(0x8000 | (b >> 48 & 0x3fff)), uint64_t(b & 0xffffffffffffULL));
  return buf;
}

const char* const kWords[] = {"capture", "report", "scan", "IMG", "backup", "sample", "export", "render",
                              "frame", "dataset", "invoice", "log", "snapshot", "build", "track", "mail"};
const char* const kExts[] = {"jpg", "pdf", "bin", "dat", "txt", "log", "tar", "png",
                             "mp4", "csv", "iso", "raw", "xml", "doc", "zip", "wav"};

std::string PathOf(uint64_t i) {
  const uint64_t dir = i / kFilesPerDir, project = dir / kDirsPerProject, group = project / kProjectsPerGroup;
  const uint64_t h = Mix(dir ^ 0x5be0cd19137e2179ULL);
  char buf[160];
  std::snprintf(buf, sizeof buf, "/srv/archive/group%03" PRIu64 "/project%05" PRIu64 "/run%03" PRIu64 "/%s_%09" PRIu64
                ".%s", group, project, dir % kDirsPerProject, kWords[h % 16], i, kExts[(h >> 8) % 16]);
  return buf;
}

struct Totals {
  uint64_t files = 0, originals = 0, copies = 0, shared_copies = 0, inline_copies = 0, whole_file_groups = 0;
  uint64_t partial_files = 0, partial_blocks = 0, inline_files = 0;
  uint64_t bytes = 0, duplicate_bytes = 0, shared_bytes = 0, block_hashes = 0, extents = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Write a synthetic extent index, in the format oans-scan writes, for tests and scale\n"
      "benchmarks of oans-plan. No filesystem is read: sizes, extents and hashes are drawn from\n"
      "a seeded generator, so the same options always give the same file, and records are\n"
      "streamed, so memory does not grow with --files.\n"
      "Sizes are log-normal (mean --mean-size, standard deviation --size-spread of ln(size)),\n"
      "1 byte to --max-blocks blocks. Exactly round(N x --dup-ratio) files are whole-file\n"
      "copies of an earlier file with their own extents, round(copies x --shared-ratio) of\n"
      "them already share the original's extents, and round(N x --partial-ratio) files share\n"
      "a run of whole blocks with an earlier file. Files up to --max-inline bytes are inline.\n"
      "Example: oans-gen-index --files 1M --dup-ratio 0.2 -o big.idx && oans-plan --stats big.idx",
      "oans-gen-index"};
  app.set_version_flag("--version", ToolVersionString("oans-gen-index"));
  std::string output = "-";
  uint64_t files = 0, seed = 1, mean_size = 256 * 1024, block_size = 128 * 1024, max_blocks = 8192,
           max_inline = 2048, dev = 45;
  double spread = 2.0, dup_ratio = 0.1, shared_ratio = 0.0, partial_ratio = 0.0;
  bool json = false, quiet = false;
  app.add_option("-o,--output", output, "Write the index to FILE (atomically) instead of standard output")
      ->type_name("FILE");
  AddCount(app, "--files", &files, "Number of file records: 10000, 100k, 10M (decimal multiples)")->required();
  app.add_option("--seed", seed, "Seed of the generator (default 1)")->type_name("N");
  cli::AddSize(app, "--mean-size", &mean_size, "Mean file size before the --max-blocks cap (default 256K)");
  app.add_option("--size-spread", spread,
                 "Standard deviation of ln(size) (default 2.0: the median is 13.5% of the mean; 0: every file "
                 "is --mean-size)")
      ->check(CLI::Range(0.0, 5.0))
      ->type_name("F");
  app.add_option("--dup-ratio", dup_ratio, "Fraction of files that are whole-file copies of another (default 0.1)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("F");
  app.add_option("--shared-ratio", shared_ratio,
                 "Fraction of the copies that already share their original's extents (default 0)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("F");
  app.add_option("--partial-ratio", partial_ratio,
                 "Fraction of files sharing a run of blocks (not the whole file) with another (default 0)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("F");
  cli::AddSize(app, "--block-size", &block_size,
               "Bytes per block hash, a multiple of 4K; must match the scans it stands for (default 128K)");
  AddCount(app, "--max-blocks", &max_blocks,
           "Largest file in blocks, i.e. at most N block hashes per record (default 8192: 1 GiB at 128K)");
  cli::AddSize(app, "--max-inline", &max_inline,
               "Files up to SIZE bytes are stored inline, as btrfs does by default (default 2048; 0: none; "
               "below 4K)");
  app.add_option("--dev", dev,
                 "Device number in the records and the filesystem entry (default 45); btrfs gives its "
                 "subvolumes anonymous numbers that change with mount order, so another --dev stands for "
                 "the same tree after a remount")
      ->type_name("N");
  app.add_flag("--json", json, "Print what was generated as JSON on stderr");
  app.add_flag("-q,--quiet", quiet, "Print only errors");
  app.footer(cli::ExitCodesHelp());
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;

  const char* tool = "oans-gen-index";
  if (files == 0) return cli::Fail(tool, "--files must be at least 1");
  if (block_size < kSector || block_size % kSector != 0 || block_size > (1u << 30))
    return cli::Fail(tool, "--block-size must be a multiple of 4K, at most 1G");
  if (max_blocks == 0 || max_blocks > (1u << 24)) return cli::Fail(tool, "--max-blocks must be 1 to 16M");
  if (max_inline >= kSector) return cli::Fail(tool, "--max-inline must be below 4K");
  if (mean_size == 0) return cli::Fail(tool, "--mean-size must be at least 1");
  const uint64_t max_size = max_blocks * block_size;
  // Exact counts. File 0 is an original, so copies always have something to copy.
  uint64_t want_copies = uint64_t(std::llround(double(files) * dup_ratio));
  uint64_t want_partial = uint64_t(std::llround(double(files) * partial_ratio));
  if (want_copies + want_partial > files - 1)
    return cli::Fail(tool, "--dup-ratio plus --partial-ratio leave no original file to copy from");
  uint64_t want_shared = uint64_t(std::llround(double(want_copies) * shared_ratio));
  if (want_partial > 0 && max_blocks < 2)
    return cli::Fail(tool, "--partial-ratio needs --max-blocks of at least 2");

  std::atomic<bool> stop{false};
  cli::InstallSignalHandlers(&stop);
  auto out = OutputFile::Open(output);
  if (!out.ok()) return cli::Fail(tool, out.status());
  const auto started = std::chrono::steady_clock::now();

  IndexHeader header;
  header.tool_version = ToolVersion();
  header.created_ns = kBaseTimeNs + 86400LL * 1000000000LL;
  header.roots = {"/srv/archive"};
  FsRecord fs;
  fs.uuid = Uuid(seed);
  fs.subvolume = 5;
  fs.dev = dev;  // an anonymous device number, as btrfs gives its subvolumes
  fs.type = "btrfs";
  fs.block_size = uint32_t(kSector);
  fs.mount_point = "/srv/archive";
  header.filesystems = {fs};
  header.block_size = uint32_t(block_size);
  header.hostname = "synthetic";
  header.command_line = cli::Argv(argc, argv);
  IndexWriter writer(out->get());
  if (Status st = writer.WriteHeader(header); !st.ok()) return cli::Fail(tool, st);

  Rng rng(seed);
  const double mu = std::log(double(mean_size)) - spread * spread / 2;
  const uint64_t id_base = Mix(seed ^ 0x510e527fade682d1ULL);
  uint64_t physical = kFirstPhysical;
  Window<Original> originals;        // what copies copy
  Window<BlockSource> block_sources;  // what partial files share blocks with
  uint64_t copies_left = want_copies, partial_left = want_partial;
  uint64_t copy_decisions_left = want_copies, shared_left = want_shared;
  Totals t;

  auto draw_size = [&] {
    double s = std::exp(mu + spread * rng.Normal());
    if (!(s < double(max_size))) return max_size;  // also catches overflow
    return std::max<uint64_t>(1, uint64_t(std::llround(s)));
  };
  auto allocate = [&](uint64_t size, std::vector<FiemapExtent>* ext) {
    if (size <= max_inline) {
      ext->push_back({0, 0, kSector, kFlagInline | kFlagNotAligned | kFlagLast});
      return true;
    }
    const uint64_t alloc = (size + kSector - 1) / kSector * kSector;
    uint64_t n = alloc > (1u << 20) ? 1 + rng.Below(3) : 1;
    n = std::min(std::max(n, (alloc + kMaxExtent - 1) / kMaxExtent), alloc / kSector);
    uint64_t logical = 0;
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t len = k + 1 == n ? alloc - logical : alloc / n / kSector * kSector;
      ext->push_back({logical, physical, len, k + 1 == n ? kFlagLast : 0});
      logical += len;
      physical += len;
      if (k + 1 < n) physical += kSector * (1 + rng.Below(256));  // fragments are not adjacent
    }
    if (rng.Below(8) == 0) physical += kSector * rng.Below(64);  // space freed by deleted files
    return false;
  };

  for (uint64_t i = 0; i < files; ++i) {
    if ((i & 0xffff) == 0 && stop.load()) {
      std::fprintf(stderr, "%s: interrupted; nothing written\n", tool);
      return cli::kStopped;
    }
    FileEntry e;
    e.path = PathOf(i);
    e.fs = 0;
    e.dev = fs.dev;
    e.ino = 257 + i + i / kFilesPerDir + 1;  // each directory's inode precedes its files
    e.nlink = 1;
    e.mtime_ns = kBaseTimeNs - int64_t(rng.Below(3 * 365 * 86400ULL)) * 1000000000LL - int64_t(rng.Below(1000000000));
    e.ctime_ns = e.mtime_ns + int64_t(rng.Below(3600ULL * 1000000000ULL));
    e.hashed = true;
    // Exactly the asked number of copies and partial files, at random places
    // (sequential selection sampling; file 0 is always an original).
    enum { kOriginal, kCopy, kPartial } kind = kOriginal;
    if (i > 0) {
      const uint64_t remaining = files - i, u = rng.Below(remaining);
      if (u < copies_left) kind = kCopy;
      else if (u < copies_left + partial_left && !block_sources.empty()) kind = kPartial;
    }
    const uint64_t bs = block_size;
    if (kind == kCopy) {
      copies_left--;
      Original& src = originals.Pick(rng);
      bool share = rng.Below(copy_decisions_left--) < shared_left && !src.inline_data;
      e.size = src.size;
      e.hash = WholeHash(src.id);
      uint64_t nb = (e.size + bs - 1) / bs;
      e.block_hashes.reserve(nb);
      for (uint64_t b = 0; b < nb; ++b) e.block_hashes.push_back(e.size <= bs ? e.hash : BlockHash(src.id, b));
      if (share) {
        e.extents = src.extents;
        shared_left--;
        t.shared_copies++;
        t.shared_bytes += e.size;
      } else {
        allocate(e.size, &e.extents);
      }
      t.copies++;
      if (src.inline_data) {
        t.inline_copies++;
        t.inline_files++;
      } else {
        t.duplicate_bytes += e.size;
        if (!src.copied) t.whole_file_groups++;
        src.copied = true;
      }
    } else if (kind == kPartial) {
      partial_left--;
      const BlockSource src = block_sources.Pick(rng);
      const uint64_t id = id_base + i;
      const uint64_t src_full = src.size / bs;
      const uint64_t pre = std::min<uint64_t>(rng.Below(3), max_blocks - 2);
      const uint64_t s0 = rng.Below(src_full);
      const uint64_t run = 1 + rng.Below(std::min(src_full - s0, max_blocks - pre - 1));
      const uint64_t room = (max_blocks - pre - run) * bs;
      const uint64_t tail = 1 + rng.Below(std::min(room, 2 * bs));
      e.size = (pre + run) * bs + tail;
      e.hash = WholeHash(id);
      uint64_t nb = (e.size + bs - 1) / bs;
      e.block_hashes.reserve(nb);
      for (uint64_t b = 0; b < nb; ++b)
        e.block_hashes.push_back(b >= pre && b < pre + run ? BlockHash(src.id, s0 + b - pre) : BlockHash(id, b));
      allocate(e.size, &e.extents);
      t.partial_files++;
      t.partial_blocks += run;
      t.duplicate_bytes += run * bs;
    } else {
      Original o;
      o.id = id_base + i;
      o.size = draw_size();
      o.inline_data = allocate(o.size, &o.extents);
      e.size = o.size;
      e.hash = WholeHash(o.id);
      uint64_t nb = (e.size + bs - 1) / bs;
      e.block_hashes.reserve(nb);
      for (uint64_t b = 0; b < nb; ++b) e.block_hashes.push_back(e.size <= bs ? e.hash : BlockHash(o.id, b));
      e.extents = o.extents;
      t.originals++;
      if (o.inline_data) t.inline_files++;
      if (o.size >= bs) block_sources.Add({o.id, o.size});
      originals.Add(std::move(o));
    }
    t.files++;
    t.bytes += e.size;
    t.block_hashes += e.block_hashes.size();
    t.extents += e.extents.size();
    if (Status st = writer.Add(std::move(e)); !st.ok()) return cli::Fail(tool, st);
  }
  if (Status st = writer.Finish(); !st.ok()) return cli::Fail(tool, st);
  if (Status st = (*out)->Commit(); !st.ok()) return cli::Fail(tool, st);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (t.partial_files < want_partial)
    std::fprintf(stderr,
                 "%s: warning: only %" PRIu64 " of %" PRIu64
                 " partial files: too few files of at least one block to share with\n",
                 tool, t.partial_files, want_partial);
  if (t.shared_copies < want_shared)
    std::fprintf(stderr, "%s: warning: only %" PRIu64 " of %" PRIu64 " shared copies: the others are inline\n", tool,
                 t.shared_copies, want_shared);
  if (json) {
    std::fprintf(stderr,
                 "{\"files\":%" PRIu64 ",\"originals\":%" PRIu64 ",\"copies\":%" PRIu64 ",\"shared_copies\":%" PRIu64
                 ",\"inline_copies\":%" PRIu64 ",\"whole_file_groups\":%" PRIu64 ",\"partial_files\":%" PRIu64
                 ",\"partial_blocks\":%" PRIu64 ",\"inline_files\":%" PRIu64 ",\"bytes\":%" PRIu64
                 ",\"duplicate_bytes\":%" PRIu64 ",\"shared_bytes\":%" PRIu64 ",\"block_hashes\":%" PRIu64
                 ",\"extents\":%" PRIu64 ",\"block_size\":%" PRIu64 ",\"seconds\":%.3f}\n",
                 t.files, t.originals, t.copies, t.shared_copies, t.inline_copies, t.whole_file_groups,
                 t.partial_files, t.partial_blocks, t.inline_files, t.bytes, t.duplicate_bytes, t.shared_bytes,
                 t.block_hashes, t.extents, block_size, seconds);
  } else if (!quiet) {
    std::fprintf(stderr,
                 "%s: %" PRIu64 " files, %s: %" PRIu64 " copies (%" PRIu64 " sharing their original's extents, %" PRIu64
                 " inline), %" PRIu64 " partial, %" PRIu64 " block hashes, in %.1fs\n",
                 tool, t.files, FormatSize(t.bytes).c_str(), t.copies, t.shared_copies, t.inline_copies,
                 t.partial_files, t.block_hashes, seconds);
  }
  return cli::kOk;
}
