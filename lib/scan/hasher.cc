#include "lib/scan/hasher.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace oans {

Hash128 HashBytes(const void* data, size_t len) {
  XXH128_hash_t h = XXH3_128bits(data, len);
  return {h.high64, h.low64};
}

Result<FileHashes> HashFile(Sys& sys, int fd, uint64_t size, uint32_t block_size,
                            std::vector<char>* buffer, void (*on_bytes)(void*, uint64_t), void* ctx) {
  FileHashes out;
  if (block_size == 0) return Status::Invalid("block size must not be zero");
  // The buffer holds a whole number of blocks, at least 256 KiB: large enough that the
  // system calls cost nothing next to the copy, small enough that eight readers hold
  // 2 MiB between them (the kernel's readahead, not the buffer, makes reads sequential).
  size_t want = std::max<size_t>(block_size, (256u << 10) / block_size * block_size);
  if (buffer->size() != want) buffer->assign(want, 0);
  XXH3_state_t* whole = XXH3_createState();
  XXH3_128bits_reset(whole);
  out.blocks.reserve(size / block_size + 1);
  uint64_t off = 0;
  Status error;
  // Holes read as zeros: hash zeros for them instead of reading (sparse images).
  uint64_t data_start = 0, data_end = 0;  // the data segment known to hold `off`
  while (off < size) {
    size_t len = size_t(std::min<uint64_t>(buffer->size(), size - off));
    if (off >= data_end) {
      data_start = sys.Seek(fd, off, false);
      data_end = data_start == UINT64_MAX ? UINT64_MAX : sys.Seek(fd, data_start, true);
      if (data_start == UINT64_MAX) data_start = size;
    }
    size_t got = 0;
    if (off < data_start) {
      // A whole buffer of hole: no read. Stop at the next data, on a block boundary.
      uint64_t hole_end = std::min<uint64_t>(data_start, size);
      uint64_t n = std::min<uint64_t>(len, hole_end - off);
      n = n / block_size * block_size;
      if (n > 0) {
        len = size_t(n);
        std::memset(buffer->data(), 0, len);
        got = len;
      }
    }
    while (got < len) {
      auto r = sys.Pread(fd, buffer->data() + got, len - got, off + got);
      if (!r.ok()) {
        error = r.status();
        break;
      }
      if (*r == 0) {
        error = Status::Mismatch("file shrank while being read");
        break;
      }
      got += *r;
    }
    if (!error.ok()) break;
    XXH3_128bits_update(whole, buffer->data(), len);
    for (size_t b = 0; b < len; b += block_size)
      out.blocks.push_back(HashBytes(buffer->data() + b, std::min<size_t>(block_size, len - b)));
    off += len;
    out.bytes_read += len;
    if (on_bytes) on_bytes(ctx, len);
  }
  if (error.ok()) {
    // One more byte past the end means the file grew while we read it.
    char probe;
    auto r = sys.Pread(fd, &probe, 1, size);
    if (r.ok() && *r != 0) error = Status::Mismatch("file grew while being read");
  }
  XXH128_hash_t h = XXH3_128bits_digest(whole);
  XXH3_freeState(whole);
  if (!error.ok()) return error;
  out.whole = {h.high64, h.low64};
  return out;
}

}  // namespace oans
