# The dedupe plan written by oans-plan and executed by oans-apply: a zstd-compressed
# stream of Cap'n Proto messages, each one PlanFrame. The first frame is a header,
# then rounds in the order they are to run, then exactly one trailer.
# See docs/format.md.
@0x8849c79c31b4048b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("oans::schema");
using Common = import "common.capnp";

struct PlanHeader {
  magic @0 :Text;                # always "oans-plan"
  formatVersion @1 :UInt32;      # readers reject versions newer than they know
  toolVersion @2 :Text;          # oans version that wrote the file
  createdNs @3 :Int64;           # creation time, ns since the epoch
  roots @4 :List(Data);          # roots of the indexes planned; apply touches nothing outside
  filesystems @5 :List(Common.Filesystem);  # referenced by PlanFile.fs
  roundSize @6 :UInt64;          # --round-size: bytes read per round at most
  blockSize @7 :UInt32;          # block size of the indexes
  indexes @8 :List(Text);        # index files the plan was made from
  commandLine @9 :List(Text);    # argv of the plan, for the record
  rounds @10 :UInt64;            # number of rounds that follow
  groups @11 :UInt64;            # duplicate groups found
  duplicateBytes @12 :UInt64;    # bytes in destinations identical to a source
  sharedBytes @13 :UInt64;       # of those, bytes already sharing the source's extents
  plannedBytes @14 :UInt64;      # bytes the rounds will dedupe
  rewriteBytes @15 :UInt64;      # bytes the rounds copy into new extents first (version 2)
  storage @16 :Storage;          # the roots' storage, as the indexes recorded it; apply's
                                 # policy follows it unless told (--storage)
}

enum Storage {
  unknown @0;                    # not recorded (older plans, duplicate lists): apply measures
  ssd @1;
  hdd @2;
}

struct PlanFile {
  # A file as it was when scanned; apply checks the opened descriptor against it.
  path @0 :Data;                 # absolute path (raw bytes)
  fs @1 :UInt32;                 # index into PlanHeader.filesystems
  dev @2 :UInt64;
  ino @3 :UInt64;
  size @4 :UInt64;
  mtimeNs @5 :Int64;
  nlink @6 :UInt32;              # st_nlink when scanned (0: not recorded, an older plan)
  otherPaths @7 :List(Data);     # the file's other hardlinks seen by the scan
  unread @8 :Bool;               # the scan did not read it (FileRecord.sizePaired): its
                                 # operations pair it by size alone, and a difference apply's
                                 # compare finds is expected, not a change since the scan
}

struct Dest {
  file @0 :UInt32;               # index into Round.files
  offset @1 :UInt64;             # destination offset, block aligned
  physical @2 :UInt64;           # physical address at offset when scanned (read order)
}

struct Op {
  # One FIDEDUPERANGE call: source range against at most 127 destinations.
  source @0 :UInt32;             # index into Round.files
  offset @1 :UInt64;             # source offset, block aligned
  length @2 :UInt64;             # block aligned unless the range ends at EOF of every file
  physical @3 :UInt64;           # source physical address at offset when scanned
  dests @4 :List(Dest);
  # Version 2: a destination equal to the source range (same file, same offset) means the
  # range is first copied into a new extent, which that file and every other destination
  # then share; its old extent goes free once nothing else references it.
}

struct Round {
  index @0 :UInt64;              # 0-based position of the round in the plan
  files @1 :List(PlanFile);      # files the round touches
  ops @2 :List(Op);              # in physical order of their source
  bytes @3 :UInt64;              # bytes read by the round: sources plus destinations
}

struct PlanFrame {
  union {
    header @0 :PlanHeader;
    round @1 :Round;
    trailer @2 :Common.Trailer;
  }
}
