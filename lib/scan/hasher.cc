#include "lib/scan/hasher.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "lib/scan/sector_sums.h"

namespace oans {

namespace {

// Seed of the sparse key: a hash family of its own, apart from plain XXH3-128 of content.
constexpr XXH64_hash_t kSparseSeed = 0x6f616e732d737073ull;  // "oans-sps"

// The running state of one file's hashes.
class FileHasher {
 public:
  FileHasher(uint64_t size, uint32_t block_size) : size_(size), block_size_(block_size), sums_(size) {
    data_ = XXH3_createState();
    holes_ = XXH3_createState();
    XXH3_128bits_reset(data_);
    XXH3_128bits_reset(holes_);
    const uint64_t blocks = size / block_size + 1;
    if (blocks <= kMaxSparseBlockHashes) out_.blocks.reserve(size_t(blocks));
  }
  ~FileHasher() {
    XXH3_freeState(data_);
    XXH3_freeState(holes_);
  }
  FileHasher(const FileHasher&) = delete;
  FileHasher& operator=(const FileHasher&) = delete;

  void Data(const char* p, size_t len) {
    XXH3_128bits_update(data_, p, len);
    if (keep_blocks_)
      for (size_t b = 0; b < len; b += block_size_)
        out_.blocks.push_back(HashBytes(p + b, std::min<size_t>(block_size_, len - b)));
    sums_.Data(p, len);
    out_.bytes_read += len;
  }

  // `len` bytes of hole at `off`, both whole blocks: recorded, not hashed byte by byte.
  // `zero_block` is the hash of one block of zeros.
  void Hole(uint64_t off, uint64_t len, const Hash128& zero_block) {
    out_.sparse = true;
    sums_.Hole(len);
    const uint64_t where[2] = {off, len};
    XXH3_128bits_update(holes_, where, sizeof where);
    if (keep_blocks_ && size_ / block_size_ + 1 > kMaxSparseBlockHashes) {
      keep_blocks_ = false;
      std::vector<Hash128>().swap(out_.blocks);
    }
    if (keep_blocks_) out_.blocks.insert(out_.blocks.end(), size_t(len / block_size_), zero_block);
  }

  FileHashes Finish() {
    XXH128_hash_t d = XXH3_128bits_digest(data_);
    out_.sector_sums = sums_.Take();
    if (!out_.sparse) {
      out_.whole = {d.high64, d.low64};
      return std::move(out_);
    }
    XXH128_hash_t h = XXH3_128bits_digest(holes_);
    const uint64_t key[5] = {size_, d.high64, d.low64, h.high64, h.low64};
    XXH128_hash_t s = XXH3_128bits_withSeed(key, sizeof key, kSparseSeed);
    out_.whole = {s.high64, s.low64};
    return std::move(out_);
  }

 private:
  const uint64_t size_;
  const uint32_t block_size_;
  XXH3_state_t* data_;
  XXH3_state_t* holes_;
  bool keep_blocks_ = true;
  DataSums sums_;
  FileHashes out_;
};

// Fills buf with len bytes from offset off; a file that ends first has shrunk.
Status ReadFully(Sys& sys, int fd, char* buf, size_t len, uint64_t off) {
  for (size_t got = 0; got < len;) {
    OANS_ASSIGN_OR_RETURN(auto r, sys.Pread(fd, buf + got, len - got, off + got));
    if (r == 0) return Status::Mismatch("file shrank while being read");
    got += r;
  }
  return Status::Ok();
}

}  // namespace

FileHashes HashMemory(const char* data, size_t len, uint32_t block_size) {
  FileHasher hasher(len, block_size);
  hasher.Data(data, len);
  return hasher.Finish();
}

Result<FileHashes> HashFile(Sys& sys, int fd, uint64_t size, const ReadIo& io) {
  const uint32_t block_size = io.block_size;
  std::vector<char>* buffer = io.buffer;
  const std::atomic<bool>* stop = io.stop;
  if (block_size == 0) return Status::Invalid("block size must not be zero");
  // The buffer holds a whole number of blocks, at least 256 KiB: large enough that the
  // system calls cost nothing next to the copy, small enough that eight readers hold
  // 2 MiB between them (the kernel's readahead, not the buffer, makes reads sequential).
  size_t want = std::max<size_t>(block_size, (256u << 10) / block_size * block_size);
  if (buffer->size() != want) buffer->assign(want, 0);
  Hash128 zero_block;  // the hash of a block of zeros, made at the first hole (most files have none)
  bool have_zero_block = false;
  FileHasher hasher(size, block_size);
  uint64_t off = 0;
  uint64_t data_start = 0, data_end = 0;  // the data segment known to hold `off`
  while (off < size) {
    if (stop && stop->load(std::memory_order_relaxed)) return Status::Interrupted("stopped while reading");
    if (off >= data_end) {
      data_start = sys.Seek(fd, off, false);
      data_end = data_start == UINT64_MAX ? UINT64_MAX : sys.Seek(fd, data_start, true);
      if (data_start == UINT64_MAX) data_start = size;
    }
    if (off < data_start) {
      // A hole up to the next data: skipped in whole blocks (off is on a block boundary).
      const uint64_t n = (std::min<uint64_t>(data_start, size) - off) / block_size * block_size;
      if (n > 0) {
        if (!have_zero_block) {
          std::memset(buffer->data(), 0, block_size);
          zero_block = HashBytes(buffer->data(), block_size);
          have_zero_block = true;
        }
        hasher.Hole(off, n, zero_block);
        off += n;
        continue;
      }
    }
    const size_t len = size_t(std::min<uint64_t>(buffer->size(), size - off));
    OANS_RETURN_IF_ERROR(ReadFully(sys, fd, buffer->data(), len, off));
    hasher.Data(buffer->data(), len);
    off += len;
    if (io.bytes_read) io.bytes_read->fetch_add(len);
  }
  // One more byte past the end means the file grew while we read it.
  char probe;
  auto r = sys.Pread(fd, &probe, 1, size);
  if (r.ok() && *r != 0) return Status::Mismatch("file grew while being read");
  return hasher.Finish();
}

}  // namespace oans
