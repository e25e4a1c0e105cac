// Sector sums from btrfs checksums (lib/scan/csum.h), against a fake checksum tree.
#include "lib/scan/csum.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <random>

#include "tests/lib/test_util.h"

namespace oans {
namespace {

constexpr uint64_t kPhys = 1u << 30;  // where the file's first extent is, as FIEMAP says

// A btrfs of one file: its extents, a checksum tree of items, the checksum type.
class FakeBtrfs : public test::ForwardingSys {
 public:
  uint16_t csum_type = 0;
  bool refuse = false;
  std::vector<FiemapExtent> extents;
  std::map<uint64_t, std::string> items;  // checksum items by logical address
  int searches = 0;

  Result<BtrfsInfo> BtrfsInfoOf(int) override {
    BtrfsInfo i;
    i.csum_type = csum_type;
    i.csum_size = csum_type == 0 ? 4 : csum_type == 1 ? 8 : 32;
    return i;
  }
  Status TreeSearch(int, const BtrfsSearch& s, const BtrfsVisitor& visit) override {
    if (refuse) return Status::Io("BTRFS_IOC_TREE_SEARCH_V2", EPERM);
    EXPECT_EQ(s.tree_id, kBtrfsCsumTree);
    searches++;
    for (const auto& [at, data] : items) {
      const BtrfsKey k{kBtrfsExtentCsumObjectid, kBtrfsExtentCsum, at};
      if (k < s.min || s.max < k) continue;
      if (!visit({k, 1, data})) break;
    }
    return Status::Ok();
  }
  Status Fiemap(int, std::vector<FiemapExtent>* out) override {
    *out = extents;
    return Status::Ok();
  }
  // Checksum items for sectors [first, first + n) of `data` at logical address `at`,
  // `per_item` sectors each; `mark` is xored into every stored value (to tell them from
  // values computed over data read).
  void AddSums(const std::string& data, uint64_t first, uint64_t n, uint64_t at, uint32_t mark, uint64_t per_item) {
    for (uint64_t i = 0; i < n; i += per_item) {
      std::string item;
      for (uint64_t k = i; k < std::min(n, i + per_item); ++k) {
        const uint64_t off = (first + k) * 4096;
        uint32_t v = SectorSum(SumKind::kCrc32c, data.data() + off, std::min<size_t>(4096, data.size() - off)) ^ mark;
        PutSum(&item, v);
      }
      items[at + i * 4096] = item;
    }
  }
};

struct Fixture {
  explicit Fixture(size_t size) {
    std::mt19937_64 rng(size);
    data.resize(size);
    for (auto& c : data) c = char(rng());
    test::WriteFile(dir.Join("f"), data);
    fd = ::open(dir.Join("f").c_str(), O_RDONLY | O_CLOEXEC);
    e.size = size;
  }
  ~Fixture() { ::close(fd); }
  Result<bool> Fill(Checksums& c, ReadWhy* why) {
    e.extents = sys.extents;
    return c.Fill(fd, "fs", {128 * 1024, &buffer, nullptr, nullptr}, &e, why);
  }
  uint32_t DataSum(uint64_t sector) const {
    const uint64_t off = sector * 4096;
    return SectorSum(SumKind::kCrc32c, data.data() + off, std::min<size_t>(4096, data.size() - off));
  }
  test::TempDir dir;
  std::string data;
  int fd = -1;
  FakeBtrfs sys;
  FileEntry e;
  std::vector<char> buffer;
};

// Every sector's sum from the tree (items starting before the extent, spanning it in
// pieces), none read; keys of kind crc32c.
TEST(Checksums, AFileOfRegularExtentsIsNotRead) {
  Fixture f(10 * 4096 + 1000);
  f.sys.extents = {{0, kPhys, 11 * 4096, kExtentLast}};
  std::string before(3 * 4096, 'x');
  f.sys.AddSums(before + f.data, 0, 14, kPhys - 3 * 4096, 0x5a5a5a5a, 4);
  Checksums c(f.sys, false);
  ReadWhy why;
  auto r = f.Fill(c, &why);
  ASSERT_OK(r.status());
  ASSERT_TRUE(*r);
  EXPECT_EQ(f.e.sum_kind, uint8_t(SumKind::kCrc32c));
  EXPECT_EQ(f.e.key_kind, uint8_t(SumKind::kCrc32c));
  EXPECT_TRUE(f.e.hashed);
  ASSERT_EQ(f.e.sector_sums.size(), 11u * 4);
  for (uint64_t i = 0; i < 11; ++i) EXPECT_EQ(SumAt(f.e.sector_sums, i), f.DataSum(i) ^ 0x5a5a5a5a) << i;
  const ChecksumCounts n = c.counts();
  EXPECT_EQ(n.bytes, f.data.size());
  EXPECT_EQ(n.files, 1u);
  for (uint64_t b : n.read) EXPECT_EQ(b, 0u);
  // A second file in the same range costs no search.
  const int searches = f.sys.searches;
  ASSERT_OK(f.Fill(c, &why).status());
  EXPECT_EQ(f.sys.searches, searches);
}

// A hole is neither read nor looked up; a compressed extent and a sector without a
// checksum are read, and say so.
TEST(Checksums, CompressedHolesAndMissingChecksums) {
  Fixture f(12 * 4096);
  f.sys.extents = {{0, kPhys, 4 * 4096, 0},
                   {6 * 4096, 5u << 30, 4 * 4096, kExtentEncoded},
                   {10 * 4096, kPhys + 10 * 4096, 2 * 4096, kExtentLast}};
  f.sys.AddSums(f.data, 0, 3, kPhys, 0x1, 64);             // sector 3: no checksum
  f.sys.AddSums(f.data, 10, 2, kPhys + 10 * 4096, 0x1, 64);
  // Sectors 4 and 5 are a hole: zeros in the file.
  std::string z(2 * 4096, '\0');
  f.data.replace(4 * 4096, z.size(), z);
  test::WriteFile(f.dir.Join("f"), f.data);
  Checksums c(f.sys, false);
  ReadWhy why;
  auto r = f.Fill(c, &why);
  ASSERT_OK(r.status());
  ASSERT_TRUE(*r);
  for (uint64_t i : {0, 1, 2, 10, 11}) EXPECT_EQ(SumAt(f.e.sector_sums, i), f.DataSum(i) ^ 1) << i;
  for (uint64_t i : {3, 4, 5, 6, 7, 8, 9}) EXPECT_EQ(SumAt(f.e.sector_sums, i), f.DataSum(i)) << i;
  const ChecksumCounts n = c.counts();
  EXPECT_EQ(n.bytes, 5u * 4096);
  EXPECT_EQ(n.hole_bytes, 2u * 4096);
  EXPECT_EQ(n.read[size_t(ReadWhy::kCompressed)], 4u * 4096);
  EXPECT_EQ(n.read[size_t(ReadWhy::kNoChecksum)], 4096u);
}

TEST(Checksums, FilesLeftToBeReadSayWhy) {
  Fixture f(3 * 4096);
  f.sys.extents = {{0, kPhys, 3 * 4096, kExtentLast | kExtentEncoded}};
  ReadWhy why;
  {
    Checksums c(f.sys, true);
    EXPECT_FALSE(*f.Fill(c, &why));
    EXPECT_EQ(why, ReadWhy::kAsked);
  }
  {
    f.sys.refuse = true;
    Checksums c(f.sys, false);
    EXPECT_FALSE(*f.Fill(c, &why));
    EXPECT_EQ(why, ReadWhy::kNotPermitted);
    f.sys.refuse = false;
  }
  {
    Checksums c(f.sys, false);
    f.e.inode_flags = 0x00800000;  // nodatacow
    EXPECT_FALSE(*f.Fill(c, &why));
    EXPECT_EQ(why, ReadWhy::kNoCow);
    f.e.inode_flags = 0;
  }
  {
    // sha256 is not computed here: a compressed extent leaves the whole file to be read.
    f.sys.csum_type = 2;
    Checksums c(f.sys, false);
    EXPECT_FALSE(*f.Fill(c, &why));
    EXPECT_EQ(why, ReadWhy::kCompressed);
    EXPECT_FALSE(f.e.hashed);
  }
  {
    struct NotBtrfs : test::ForwardingSys {
      Result<BtrfsInfo> BtrfsInfoOf(int) override { return Status::Io("BTRFS_IOC_FS_INFO", ENOTTY); }
    } other;
    Checksums c(other, false);
    f.e.extents = f.sys.extents;
    EXPECT_FALSE(*c.Fill(f.fd, "fs", {128 * 1024, &f.buffer, nullptr, nullptr}, &f.e, &why));
    EXPECT_EQ(why, ReadWhy::kNotBtrfs);
  }
}

// Extents that move while the checksums are looked up (a dedupe, a rewrite): the file
// is read instead.
TEST(Checksums, ExtentsThatMoveMeanwhileAreRead) {
  Fixture f(2 * 4096);
  f.sys.extents = {{0, kPhys, 2 * 4096, kExtentLast}};
  f.sys.AddSums(f.data, 0, 2, kPhys, 0, 64);
  Checksums c(f.sys, false);
  ReadWhy why;
  f.e.extents = {{0, kPhys + 4096 * 64, 2 * 4096, kExtentLast}};  // the map the walk saw
  f.sys.AddSums(f.data, 0, 2, kPhys + 4096 * 64, 0, 64);
  auto r = c.Fill(f.fd, "fs", {128 * 1024, &f.buffer, nullptr, nullptr}, &f.e, &why);
  ASSERT_OK(r.status());
  EXPECT_FALSE(*r);
  EXPECT_EQ(why, ReadWhy::kNoChecksum);
}

}  // namespace
}  // namespace oans
