// Helpers shared by the unit tests: a temporary directory per test, small file helpers,
// a Sys that forwards to the real one (tests override the calls they want to fault),
// and writers for synthetic index and plan files.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/index_file.h"
#include "lib/format/plan_file.h"
#include "lib/base/status.h"
#include "lib/base/sys.h"

namespace oans::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it (including
// trees deeper than PATH_MAX) when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // path() + "/" + rel
  std::string Join(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Removes a tree, however deep, without following symlinks.
void RemoveTree(const std::string& path);

// Writes a whole file (creating parent directories is the caller's job); fails the test on error.
void WriteFile(const std::string& path, const std::string& data);
std::string ReadFile(const std::string& path);
bool Exists(const std::string& path);
// lstat of path as a FileStat (dev, ino, size, mtime_ns, ...).
FileStat StatPath(const std::string& path);
void MakeDir(const std::string& path);
// Deterministic pseudo-random bytes.
std::string RandomBytes(size_t n, uint64_t seed);
// Entries of a directory, without "." and "..", sorted.
std::vector<std::string> ListDir(const std::string& path);

// Status checks that print the message on failure.
#define EXPECT_OK(expr)                                                   \
  do {                                                                    \
    const ::oans::Status _s = (expr);                                     \
    EXPECT_TRUE(_s.ok()) << #expr << ": " << _s.message();                \
  } while (0)
#define ASSERT_OK(expr)                                                   \
  do {                                                                    \
    const ::oans::Status _s = (expr);                                     \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.message();                \
  } while (0)

// True when s has code `code` and its message contains `part`; explains otherwise.
::testing::AssertionResult StatusIs(const Status& s, Status::Code code, const std::string& part = "");
const char* CodeName(Status::Code c);

// A Sys that passes every call to DefaultSys(). Tests derive from it and override the
// calls they want to fail or observe.
class ForwardingSys : public Sys {
 public:
  Result<int> OpenNoFollow(const std::string& path) override { return real().OpenNoFollow(path); }
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    return real().OpenAt(dirfd, name, directory);
  }
  void Close(int fd) override { real().Close(fd); }
  Result<FileStat> Fstat(int fd) override { return real().Fstat(fd); }
  Result<FileStat> StatAt(int dirfd, const std::string& name) override { return real().StatAt(dirfd, name); }
  Status Fiemap(int fd, std::vector<FiemapExtent>* out) override { return real().Fiemap(fd, out); }
  Status FiemapRange(int fd, uint64_t offset, uint64_t length, std::vector<FiemapExtent>* out) override {
    return real().FiemapRange(fd, offset, length, out);
  }
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override {
    return real().Pread(fd, buf, len, offset);
  }
  Status DedupeRange(int src_fd, uint64_t src_offset, uint64_t length, std::vector<DedupeDest>* dests) override {
    return real().DedupeRange(src_fd, src_offset, length, dests);
  }
  uint32_t InodeFlags(int fd) override { return real().InodeFlags(fd); }
  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override { return real().ReadDir(fd, batch); }
  StorageInfo DetectStorage(const std::vector<std::string>& devices) override {
    return real().DetectStorage(devices);
  }
  Result<FsIdentity> Identify(int fd) override { return real().Identify(fd); }
  uint64_t Seek(int fd, uint64_t offset, bool hole) override { return real().Seek(fd, offset, hole); }
  Status ChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) override {
    return real().ChangedInodes(fd, since, first, last, inodes);
  }
  Status TreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit) override {
    return real().TreeSearch(fd, search, visit);
  }
  Result<BtrfsInfo> BtrfsInfoOf(int fd) override { return real().BtrfsInfoOf(fd); }
  Status Syncfs(int fd) override { return real().Syncfs(fd); }
  Status Fsync(int fd) override { return real().Fsync(fd); }
  Result<std::vector<std::string>> MountPoints() override { return real().MountPoints(); }
  Result<uint32_t> InodeSize(int fd) override { return real().InodeSize(fd); }
  Status ReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) override {
    return real().ReadInodeTables(fd, stop, out);
  }
  Result<uint32_t> ReadDirectoryInDiskOrder(int fd) override { return real().ReadDirectoryInDiskOrder(fd); }
  uint64_t MemoryAvailable() override { return real().MemoryAvailable(); }
  Result<std::string> BtrfsDevicePath(int fd, uint64_t devid) override { return real().BtrfsDevicePath(fd, devid); }
  Result<int> OpenBlockDevice(const std::string& path) override { return real().OpenBlockDevice(path); }
  Result<std::string> DirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino) override {
    return real().DirectoryPath(fd, tree_id, dir_ino);
  }
  void WillNeed(int fd, uint64_t offset, uint64_t length) override { real().WillNeed(fd, offset, length); }
  void DontNeed(int fd, uint64_t offset, uint64_t length) override { real().DontNeed(fd, offset, length); }
  Result<int> OpenDirNoFollow(const std::string& path) override { return real().OpenDirNoFollow(path); }
  Result<std::vector<std::pair<std::string, std::string>>> Xattrs(int fd) override { return real().Xattrs(fd); }
  Status SetLease(int fd, bool read) override { return real().SetLease(fd, read); }
  bool LeaseHeld(int fd) override { return real().LeaseHeld(fd); }
  Status LinkAt(int fd, int dirfd, const std::string& name) override { return real().LinkAt(fd, dirfd, name); }
  Status ExchangeAt(int dirfd, const std::string& a, const std::string& b) override {
    return real().ExchangeAt(dirfd, a, b);
  }
  Status UnlinkAt(int dirfd, const std::string& name) override { return real().UnlinkAt(dirfd, name); }
  Result<int> OpenTmpfile(int dirfd) override { return real().OpenTmpfile(dirfd); }
  Status SetInodeFlags(int fd, uint32_t flags) override { return real().SetInodeFlags(fd, flags); }
  Status Pwrite(int fd, const void* buf, size_t len, uint64_t offset) override {
    return real().Pwrite(fd, buf, len, offset);
  }

 protected:
  static Sys& real() { return DefaultSys(); }
};

// A btrfs filesystem record as a scan writes it (4 KiB sectors).
FsRecord BtrfsFs(const std::string& uuid, uint64_t subvolume, uint64_t dev, const std::string& mount_point);
// Every field of every extent equal, each difference named.
void ExpectSameExtents(const std::vector<FiemapExtent>& got, const std::vector<FiemapExtent>& want);

// Writes a complete index (header, records in batches of batch_records, trailer) and
// commits it. With finish=false the trailer is left out, as an interrupted scan does.
void WriteIndex(const std::string& path, const IndexHeader& header, const std::vector<FileEntry>& files,
                size_t batch_records = 2048, bool finish = true);
// Writes a complete plan and commits it.
void WritePlan(const std::string& path, const PlanHeader& header, const std::vector<PlanRound>& rounds,
               bool finish = true);
// Reads every round of a plan; fails the test on error.
std::vector<PlanRound> ReadAllRounds(const std::string& path, PlanHeader* header = nullptr);

// Largest single operator-new request since the last reset (the tests replace the global
// operator new to track it).
void ResetLargestAllocation();
size_t LargestAllocation();

}  // namespace oans::test
