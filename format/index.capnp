# The extent index written by oans-scan: a zstd-compressed stream of Cap'n Proto
# messages, each one IndexFrame. The first frame is a header, then any number of
# batches, then exactly one trailer. See docs/format.md.
@0x89fcaa505394dda2;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("oans::schema");
using Common = import "common.capnp";

struct IndexHeader {
  magic @0 :Text;                # always "oans-index"
  formatVersion @1 :UInt32;      # readers reject versions newer than they know
  toolVersion @2 :Text;          # oans version that wrote the file
  createdNs @3 :Int64;           # creation time, ns since the epoch
  roots @4 :List(Data);          # absolute roots as given (bytes, not necessarily UTF-8)
  filesystems @5 :List(Common.Filesystem);  # referenced by FileRecord.fs
  blockSize @6 :UInt32;          # bytes per block hash
  minSize @7 :UInt64;            # files smaller than this were not recorded
  excludes @8 :List(Text);       # --exclude globs
  hostname @9 :Text;             # machine that wrote it
  commandLine @10 :List(Text);   # argv of the scan, for the record
  directories @11 :Bool;         # every directory read is recorded (IndexBatch.dirs), all of
                                 # them in batches before the first file record; a later
                                 # scan that follows btrfs changes needs them
  followedFrom @12 :Int64;       # made by following btrfs changes since the index whose
                                 # createdNs this is (0: by a walk)
  sameAsFollowed @13 :Bool;      # and every record equals one of that index, none missing
  mountsBelow @14 :Bool;         # a filesystem was mounted below a root when the scan began
                                 # (the walk does not cross into it; btrfs records no mounts)
  readData @15 :Bool;            # keys were asked of file data (--read-data), not of btrfs
                                 # checksums; every key of a version 1 index is of data
  changedKnown @16 :Bool;        # with followedFrom: changedFiles and changedAt are filled
  changedFiles @17 :List(InodeRef);  # every file record new or changed since the index
                                 # followed (by FileIdentity: size, mtime, ctime; see
                                 # docs/format.md), each once
  changedAt @18 :UInt64;         # bytes from the end of this header's frame to the first
                                 # batch frame that may hold one of them: all are after it
  spinning @19 :Bool;            # the roots are on a spinning disk (detected, or --storage=hdd):
                                 # oans-plan then makes larger rounds by default
  owners @20 :Bool;              # every FileRecord has uid and gid (oans-plan --same-owner)
  refsKnown @21 :Bool;           # btrfs: batches after the files list every data extent
                                 # the records name (IndexBatch.extents), with its references
  subvolumes @22 :List(Subvolume);  # btrfs: by filesystem, as IndexHeader.filesystems
                                 # (empty, or one per filesystem; zero where not btrfs)
}

struct Subvolume {
  # What the plan's space estimate needs of a btrfs subvolume (docs/format.md).
  readOnly @0 :Bool;             # a read-only subvolume (a snapshot, as snapper makes them)
  shared @1 :Bool;               # its tree blocks may be shared: a snapshot, or snapshotted
  treeBytes @2 :UInt64;          # its tree's size (ROOT_ITEM bytes_used)
  nodeSize @3 :UInt32;           # tree block size
  metadataCopies @4 :UInt32;     # copies the metadata profile keeps (DUP: 2)
}

struct DataExtent {
  # One btrfs data extent that file records reference, and every reference to it.
  fs @0 :UInt32;                 # index into IndexHeader.filesystems (its filesystem)
  bytenr @1 :UInt64;             # its logical address; FileRecord extents point into it
  diskBytes @2 :UInt64;          # bytes on disk (the compressed size when compressed)
  refs @3 :UInt32;               # distinct (subvolume, inode) referencing it, scanned or not
  roRefs @4 :UInt32;             # of those, in read-only subvolumes
}

struct InodeRef {
  fs @0 :UInt32;                 # index into IndexHeader.filesystems
  ino @1 :UInt64;
}

struct FileRecord {
  path @0 :Data;                 # absolute path (raw bytes)
  fs @1 :UInt32;                 # index into IndexHeader.filesystems
  dev @2 :UInt64;                # st_dev
  ino @3 :UInt64;                # st_ino
  size @4 :UInt64;               # st_size
  mtimeNs @5 :Int64;             # modification time, ns
  ctimeNs @6 :Int64;             # change time, ns
  nlink @7 :UInt32;              # st_nlink
  inodeFlags @8 :UInt32;         # FS_IOC_GETFLAGS (immutable 0x10, append 0x20, nocow 0x800000)
  extents @9 :List(Common.Extent);
  hashHi @10 :UInt64;            # XXH3-128 of the whole file, high half
  hashLo @11 :UInt64;            # XXH3-128 of the whole file, low half
  blockHashes @12 :Data;         # XXH3-128 per block, 16 bytes each (hi then lo, little-endian)
  hashed @13 :Bool;              # hashes are valid (false when the file could not be read)
  error @14 :Text;               # why the file could not be read ("" when fine)
  errnum @15 :Int32;             # errno for error, 0 when fine
  otherPaths @16 :List(Data);    # further hardlinks to the same inode seen in the walk
  reused @17 :Bool;              # hashes taken from the previous index (--previous)
  # Added in format version 2 (docs/format.md, "Sector sums and key kinds"):
  sumKind @18 :UInt8;            # what made sectorSums: 0 none, 1 crc32c, 2 xxhash64, 3 sha256, 4 blake2
  sectorSums @19 :Data;          # 4 bytes (little-endian) per 4 KiB sector, the last zero-padded
  keyKind @20 :UInt8;            # what made hashHi/Lo and blockHashes: 0 XXH3-128 of the data,
                                 # else derived from sector sums of this kind (equal to sumKind)
  uid @21 :UInt32;               # owner (valid when IndexHeader.owners)
  gid @22 :UInt32;               # group (valid when IndexHeader.owners)
  sizePaired @23 :Bool;          # left unread (hashed false, no error) by a whole-files-only
                                 # scan because exactly one other file of its filesystem has
                                 # its size: a whole-file plan pairs the two unread, and
                                 # apply's compare decides (docs/format.md)
}

struct DirRecord {
  path @0 :Data;                 # absolute path (raw bytes)
  fs @1 :UInt32;                 # index into IndexHeader.filesystems
  ino @2 :UInt64;                # st_ino
  mtimeNs @3 :Int64;             # its times when read (ns); 0: not recorded (older indexes)
  ctimeNs @4 :Int64;
}

struct IndexBatch {
  files @0 :List(FileRecord);    # at most a few thousand records per batch
  dirs @1 :List(DirRecord);      # directories read (IndexHeader.directories)
  extents @2 :List(DataExtent);  # after the last file record (IndexHeader.refsKnown)
}

struct IndexFrame {
  union {
    header @0 :IndexHeader;
    batch @1 :IndexBatch;
    trailer @2 :Common.Trailer;
  }
}
