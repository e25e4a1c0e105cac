# Types shared by the extent index (index.capnp) and the dedupe plan (plan.capnp).
# See docs/format.md for the stream layout that carries these messages.
@0x99e8f933f20812d8;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("oans::schema");

struct Filesystem {
  # One filesystem (and, on btrfs, one subvolume) that records refer to by index.
  uuid @0 :Text;         # filesystem UUID ("" when the kernel does not tell it)
  subvolume @1 :UInt64;  # btrfs subvolume id; 0 on other filesystems
  dev @2 :UInt64;        # st_dev seen at scan time (per-subvolume on btrfs)
  fsType @3 :Text;       # "btrfs", "xfs", "ext4", ...
  blockSize @4 :UInt32;  # filesystem block size (dedupe alignment)
  mountPoint @5 :Text;   # where it was mounted when scanned, for messages
  subvolumeUuid @6 :Text;  # btrfs subvolume UUID ("" elsewhere)
  generation @7 :UInt64;   # btrfs: the subvolume's generation when the scan first met it,
                           # before reading any of its files' extents; 0 when unknown
}

struct Extent {
  # One FIEMAP extent of a file.
  logical @0 :UInt64;    # offset in the file
  physical @1 :UInt64;   # fe_physical (a btrfs logical address on btrfs)
  length @2 :UInt64;     # bytes
  flags @3 :UInt32;      # FIEMAP_EXTENT_* flags (SHARED 0x2000, ENCODED 0x8, INLINE 0x200, ...)
}

struct Trailer {
  # Last message of every stream; its absence means the file was cut short.
  records @0 :UInt64;    # file records (index) or operations (plan) written
  batches @1 :UInt64;    # batch messages written
  errors @2 :UInt64;     # files recorded with an error
  bytes @3 :UInt64;      # data bytes described (index: file sizes; plan: bytes to dedupe)
}
