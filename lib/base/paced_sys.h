// PacedSys: a Sys that forwards every call to another and paces the data it moves.
// It keeps the reads (Pread, Populate) and the writes (Pwrite) of every thread together
// at or below a byte rate: --max-rate. A call sleeps after it returns until the average
// since the PacedSys was made is back under the rate. At rate 0 it only forwards.
// When paced, Populate reads at most one buffer a call, so that the pace is kept in
// steps of a buffer; WillNeed does nothing, since the kernel's read-ahead would read
// the range at full speed. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/sys.h"

namespace oans {

// The time a PacedSys reads and waits for. Tests give it a fake one.
class PaceClock {
 public:
  using Time = std::chrono::steady_clock::time_point;
  virtual ~PaceClock() = default;
  virtual Time Now() = 0;
  virtual void SleepUntil(Time t) = 0;
};

// The steady clock and std::this_thread::sleep_until.
PaceClock& SteadyPaceClock();

class PacedSys final : public Sys {
 public:
  PacedSys(Sys& inner, uint64_t bytes_per_s, PaceClock& clock = SteadyPaceClock());
  bool paced() const { return rate_ != 0; }
  // The Sys it forwards to: for reads that must not count against the rate.
  Sys& inner() { return inner_; }

  // FileSys.
  Result<int> OpenNoFollow(const std::string& path) override { return inner_.OpenNoFollow(path); }
  Result<int> OpenAt(int dirfd, const std::string& name, bool directory) override {
    return inner_.OpenAt(dirfd, name, directory);
  }
  void Close(int fd) override { inner_.Close(fd); }
  Result<FileStat> Fstat(int fd) override { return inner_.Fstat(fd); }
  Result<FileStat> StatAt(int dirfd, const std::string& name) override { return inner_.StatAt(dirfd, name); }
  Status Fiemap(int fd, std::vector<FiemapExtent>* out) override { return inner_.Fiemap(fd, out); }
  Status FiemapRange(int fd, uint64_t offset, uint64_t length, std::vector<FiemapExtent>* out) override {
    return inner_.FiemapRange(fd, offset, length, out);
  }
  Result<size_t> Pread(int fd, void* buf, size_t len, uint64_t offset) override;
  Status DedupeRange(int src_fd, uint64_t src_offset, uint64_t length, std::vector<DedupeDest>* dests) override {
    return inner_.DedupeRange(src_fd, src_offset, length, dests);
  }
  Result<bool> ReadDir(int fd, std::vector<DirEntry>* batch) override { return inner_.ReadDir(fd, batch); }
  StorageInfo DetectStorage(const std::vector<std::string>& devices) override { return inner_.DetectStorage(devices); }
  uint32_t InodeFlags(int fd) override { return inner_.InodeFlags(fd); }
  Result<FsIdentity> Identify(int fd) override { return inner_.Identify(fd); }
  Result<FsUsage> Usage(int fd) override { return inner_.Usage(fd); }
  uint64_t Seek(int fd, uint64_t offset, bool hole) override { return inner_.Seek(fd, offset, hole); }
  Result<std::vector<std::string>> MountPoints() override { return inner_.MountPoints(); }
  Result<uint32_t> InodeSize(int fd) override { return inner_.InodeSize(fd); }
  Status ReadInodeTables(int fd, const std::function<bool()>& stop, InodeTables* out) override {
    return inner_.ReadInodeTables(fd, stop, out);
  }
  Result<uint32_t> ReadDirectoryInDiskOrder(int fd) override { return inner_.ReadDirectoryInDiskOrder(fd); }
  uint64_t MemoryAvailable() override { return inner_.MemoryAvailable(); }
  Result<DeviceMounts> MountsOf(uint64_t dev) override { return inner_.MountsOf(dev); }
  Status Syncfs(int fd) override { return inner_.Syncfs(fd); }
  Status Fsync(int fd) override { return inner_.Fsync(fd); }
  void WillNeed(int fd, uint64_t offset, uint64_t length) override {
    if (!paced()) inner_.WillNeed(fd, offset, length);
  }
  Result<size_t> Populate(int fd, uint64_t offset, size_t length, std::vector<char>* buffer) override;
  void DontNeed(int fd, uint64_t offset, uint64_t length) override { inner_.DontNeed(fd, offset, length); }

  // BtrfsSys.
  Result<SpaceUse> MeasureSpace(int fd) override { return inner_.MeasureSpace(fd); }
  Status ChangedInodes(int fd, uint64_t since, uint64_t first, uint64_t last, std::vector<uint64_t>* inodes) override {
    return inner_.ChangedInodes(fd, since, first, last, inodes);
  }
  Status TreeSearch(int fd, const BtrfsSearch& search, const BtrfsVisitor& visit) override {
    return inner_.TreeSearch(fd, search, visit);
  }
  Result<BtrfsInfo> BtrfsInfoOf(int fd) override { return inner_.BtrfsInfoOf(fd); }
  Result<std::string> DirectoryPath(int fd, uint64_t tree_id, uint64_t dir_ino) override {
    return inner_.DirectoryPath(fd, tree_id, dir_ino);
  }
  Result<std::string> BtrfsDevicePath(int fd, uint64_t devid) override { return inner_.BtrfsDevicePath(fd, devid); }
  Result<int> OpenBlockDevice(const std::string& path) override { return inner_.OpenBlockDevice(path); }

  // LinkSys.
  Result<int> OpenDirNoFollow(const std::string& path) override { return inner_.OpenDirNoFollow(path); }
  Result<std::vector<std::pair<std::string, std::string>>> Xattrs(int fd) override { return inner_.Xattrs(fd); }
  Status SetLease(int fd, bool read) override { return inner_.SetLease(fd, read); }
  bool LeaseHeld(int fd) override { return inner_.LeaseHeld(fd); }
  Status LinkAt(int fd, int dirfd, const std::string& name) override { return inner_.LinkAt(fd, dirfd, name); }
  Status ExchangeAt(int dirfd, const std::string& a, const std::string& b) override {
    return inner_.ExchangeAt(dirfd, a, b);
  }
  Status UnlinkAt(int dirfd, const std::string& name) override { return inner_.UnlinkAt(dirfd, name); }
  Result<int> OpenTmpfile(int dirfd) override { return inner_.OpenTmpfile(dirfd); }
  Status SetInodeFlags(int fd, uint32_t flags) override { return inner_.SetInodeFlags(fd, flags); }
  Status Pwrite(int fd, const void* buf, size_t len, uint64_t offset) override;

 private:
  // Counts `bytes` just moved and sleeps until the average is back under the rate.
  void Account(uint64_t bytes);

  Sys& inner_;
  const uint64_t rate_;
  PaceClock& clock_;
  const PaceClock::Time start_;
  std::mutex mu_;
  uint64_t total_ = 0;  // under mu_
};

}  // namespace oans
