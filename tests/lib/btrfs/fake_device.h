// A btrfs filesystem as the tests of reads from its device see it (tree_ahead_test,
// changed_leaves_test): one subvolume, one device (devid 1, "/dev/fake") opened as
// `device_fd`, tree blocks of `node_size` bytes, and the items that place its trees: a
// chunk item, a root item.
#pragma once

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <string>

#include "lib/btrfs/search.h"
#include "tests/lib/test_util.h"

namespace oans::test {

template <typename T>
void Put(std::string* b, size_t at, T v) {
  std::memcpy(b->data() + at, &v, sizeof v);  // little-endian host
}

// A chunk of `length` bytes of one device's stripe at `physical`.
inline std::string ChunkItem(uint64_t type, uint64_t physical, uint64_t length) {
  btrfs_chunk c;
  std::memset(&c, 0, sizeof c);
  c.length = htole64(length);
  c.type = htole64(type);
  c.num_stripes = htole16(1);
  c.stripe.devid = htole64(1);
  c.stripe.offset = htole64(physical);
  return std::string(reinterpret_cast<char*>(&c), sizeof c);
}

// A tree's root item: its root block, generation, bytes in use and levels.
inline std::string RootItem(uint64_t bytenr, uint64_t generation, uint64_t bytes_used, uint8_t level) {
  btrfs_root_item r;
  std::memset(&r, 0, sizeof r);
  r.generation = htole64(generation);
  r.bytenr = htole64(bytenr);
  r.bytes_used = htole64(bytes_used);
  r.level = level;
  return std::string(reinterpret_cast<char*>(&r), sizeof r);
}

class FakeBtrfsDevice : public ForwardingSys {
 public:
  static constexpr const char* kFsid = "11111111-1111-1111-1111-111111111111";
  FakeBtrfsDevice(uint64_t subvolume, uint32_t node_size, int device_fd)
      : subvolume_(subvolume), node_size_(node_size), device_fd_(device_fd) {}
  uint16_t csum_type = 0;  // crc32c
  bool no_device = false;  // "/dev/fake" cannot be opened

  Result<FsIdentity> Identify(int) override {
    FsIdentity id;
    id.type = "btrfs";
    id.subvolume = subvolume_;
    return id;
  }
  Result<BtrfsInfo> BtrfsInfoOf(int) override {
    BtrfsInfo info;
    info.node_size = node_size_;
    info.csum_type = csum_type;
    info.uuid = kFsid;
    return info;
  }
  Result<std::string> BtrfsDevicePath(int, uint64_t devid) override {
    if (devid != 1) return Status::Invalid("no such device");
    return std::string("/dev/fake");
  }
  Result<int> OpenBlockDevice(const std::string& path) override {
    EXPECT_EQ(path, "/dev/fake");
    if (no_device) return Status::Invalid("/dev/fake is not a block device");
    return device_fd_;
  }
  void Close(int fd) override { EXPECT_EQ(fd, device_fd_); }

 private:
  const uint64_t subvolume_;
  const uint32_t node_size_;
  const int device_fd_;
};

}  // namespace oans::test
