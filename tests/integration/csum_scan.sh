#!/usr/bin/env bash
# oans-scan on btrfs takes sector sums from the checksum tree instead of reading: on a
# btrfs made with each checksum type this btrfs-progs and kernel support (crc32c,
# xxhash, sha256, blake2), and on a compress=zstd mount, with nodatacow files,
# compressed files, files mixing compressed and plain extents, holes and preallocated
# ranges. Checked: data is read only for what has no usable checksum, and the summary
# says why; crc32c sums from the tree equal crc32c computed over the data read
# (--read-data) for every file; a compressed file (read) and its plain copy (from the
# tree) get the same whole-file key where the kind is computed here (crc32c, xxhash)
# and never where it is not (sha256, blake2); plan and apply leave every file's content
# unchanged and the copies shared.
source "$(dirname "$0")/lib.sh"
it_init "$1"
for t in mkfs.btrfs btrfs chattr fallocate; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done

# mkfs_csum CSUM NAME [MOUNT_OPTIONS]: a btrfs made with --csum CSUM, mounted at MNT;
# fails (return 1) when mkfs or the kernel does not support the checksum type.
mkfs_csum() {
  local csum=$1 name=$2 opts=${3:-} img mnt loop
  LOOP=
  img=$WORK/$name.img
  mnt=$WORK/mnt-$name
  mkdir -p "$mnt"
  truncate -s 384M "$img"
  mkfs.btrfs -q -f --csum "$csum" "$img" >/dev/null 2>&1 || return 1
  loop=$(losetup -f --show "$img")
  LOOPS+=("$loop")
  LOOP=$loop
  mount ${opts:+-o "$opts"} "$loop" "$mnt" 2>/dev/null || return 1
  MOUNTS+=("$mnt")
  MNT=$mnt
}

# Compressible text: text_file PATH SIZE SEED
text_file() {
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
words = [bytes(r.choice(b"abcdefghij") for _ in range(r.randint(2, 9))) for _ in range(500)]
out = bytearray()
while len(out) < size:
    out += r.choice(words) + b" "
open(path, "wb").write(bytes(out[:size]))
PY
}

fill() {
  make_tree "$MNT/orig"
  cp -a --reflink=never "$MNT/orig" "$MNT/copy"
  mkdir "$MNT/nocow" "$MNT/z" "$MNT/plain"
  chattr +C "$MNT/nocow"
  rand_file "$MNT/nocow/a.bin" $((2 << 20)) 31
  cp --reflink=never "$MNT/nocow/a.bin" "$MNT/nocow/b.bin"
  btrfs property set "$MNT/z" compression zstd
  text_file "$MNT/z/c1.txt" $((4 << 20)) 32
  cp --reflink=never "$MNT/z/c1.txt" "$MNT/z/c2.txt"
  cp --reflink=never "$MNT/z/c1.txt" "$MNT/plain/c1.txt"  # not compressed: sums from the tree
  # Mixed: compressed text then incompressible data in one file.
  text_file "$WORK/t.part" $((1 << 20)) 33
  rand_file "$WORK/r.part" $((1 << 20)) 34
  cat "$WORK/t.part" "$WORK/r.part" > "$MNT/z/mixed.bin"
  cp --reflink=never "$MNT/z/mixed.bin" "$MNT/plain/mixed.bin"
  # Mixed: data, a hole, data, a preallocated tail.
  python3 - "$MNT/plain/holes.bin" <<'PY'
import random, sys
r = random.Random(35)
with open(sys.argv[1], "wb") as f:
    f.write(r.randbytes(1 << 20))
    f.seek(2 << 20)
    f.write(r.randbytes(1 << 20))
PY
  fallocate -o $((3 << 20)) -l $((1 << 20)) "$MNT/plain/holes.bin"
  # Extents that reference part of a disk extent (an overwrite in the middle), an extent
  # preallocated past the end, and a hardlink (opened: hardlinks are merged).
  rand_file "$MNT/plain/patched.bin" $((1 << 20)) 36
  sync
  python3 - "$MNT/plain/patched.bin" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"p" * 8192, 256 * 1024)
os.fsync(fd)
os.close(fd)
PY
  rand_file "$MNT/plain/keep.bin" $((256 << 10)) 37
  fallocate -n -o $((256 << 10)) -l $((1 << 20)) "$MNT/plain/keep.bin"
  rand_file "$MNT/plain/covered.bin" $((64 << 10)) 40
  rand_file "$MNT/plain/linked.bin" $((128 << 10)) 38
  ln "$MNT/plain/linked.bin" "$MNT/plain/linked2.bin"
  sync
}

json_field() { python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# The same group in `oans-plan --format fdupes` holds both paths?
same_group() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
groups = open(sys.argv[1]).read().split("\n\n")
sys.exit(0 if any(sys.argv[2] in g.split("\n") and sys.argv[3] in g.split("\n") for g in groups) else 1)
PY
}

# crc32c sums of every file from the tree equal those computed over the data.
same_sums() {
  "$BIN/oans-cat" --blocks "$1" > "$WORK/a.jsonl"
  "$BIN/oans-cat" --blocks "$2" > "$WORK/b.jsonl"
  python3 - "$WORK/a.jsonl" "$WORK/b.jsonl" <<'PY'
import json, sys
def load(p):
    out = {}
    for line in open(p):
        j = json.loads(line)
        if j.get("type") == "file" and "sector_sums" in j:
            out[j["path"]] = j
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
from_tree = [p for p, j in a.items() if j["key_kind"] == 1]
assert len(from_tree) > 50, len(from_tree)
bad = [p for p in a if a[p]["sector_sums"] != b[p]["sector_sums"]]
assert not bad, bad[:5]
print(f"{len(a)} files, {len(from_tree)} with keys from the tree: sums equal")
PY
}

# Every file's record mapped from btrfs's trees without opening it (the default) equals
# the one made from the open file (--read-data: FIEMAP, FS_IOC_GETFLAGS, fstat): identity,
# inode flags, extents (on btrfs no record carries FIEMAP's SHARED flag, which the tree
# map does not compute: lib/scan/builder.h) and, for the keys of data (inline files), the
# keys.
same_maps() {
  "$BIN/oans-cat" --blocks "$1" > "$WORK/a.jsonl"
  "$BIN/oans-cat" --blocks "$2" > "$WORK/b.jsonl"
  python3 - "$WORK/a.jsonl" "$WORK/b.jsonl" "$3" <<'PY'
import json, sys
def load(p):
    return {j["path"]: j for j in map(json.loads, open(p)) if j.get("type") == "file"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), sorted(a.keys() ^ b.keys())[:5]
bad = []
for p, x in a.items():
    y = b[p]
    for k in ("ino", "size", "mtime_ns", "ctime_ns", "nlink", "inode_flags"):
        if x[k] != y[k]: bad.append((p, k, x[k], y[k]))
    ex = x["extents"]
    ey = y["extents"]
    if ex != ey: bad.append((p, "extents", ex, ey))
    if x["key_kind"] == 0 == y["key_kind"] and (x["hash"], x.get("blocks")) != (y["hash"], y.get("blocks")):
        bad.append((p, "keys of data"))
assert not bad, bad[:5]
mapped = json.load(open(sys.argv[3]))["tree_mapped"]
assert mapped >= len(a) // 2, (mapped, len(a))
print(f"{len(a)} files, {mapped} mapped from the trees: the same records as from the open files")
PY
}

run_case() {
  local csum=$1 name=$2 opts=${3:-}
  if ! mkfs_csum "$csum" "$name" "$opts"; then
    echo "note: --csum $csum is not supported by this btrfs-progs or kernel; not tested"
    losetup -d "$LOOP" 2>/dev/null || true
    return 0
  fi
  fill
  local before after
  before=$(checksums "$MNT")
  "$BIN/oans-scan" --quiet --json -o "$WORK/$name.idx" "$MNT" > "$WORK/$name.json" 2>&1
  "$BIN/oans-scan" --quiet --json --read-data -o "$WORK/$name-data.idx" "$MNT" > "$WORK/$name-data.json" 2>&1
  "$BIN/oans-scan" --progress=none "$MNT" -o /dev/null 2>&1 | grep -q "from btrfs checksums" \
    || fail "$name: the summary does not say what came from checksums"
  local bytes read from_tree nocow compressed data_read
  # The data: what --read-data reads (holes are neither read nor looked up).
  bytes=$(json_field "$WORK/$name-data.json" "v['bytes_read']")
  read=$(json_field "$WORK/$name.json" "v['bytes_read']")
  from_tree=$(json_field "$WORK/$name.json" "v['checksum_bytes']")
  nocow=$(json_field "$WORK/$name.json" "v['read_by_reason'].get('nodatacow', 0)")
  compressed=$(json_field "$WORK/$name.json" "v['read_by_reason'].get('compressed', 0)")
  data_read=$(json_field "$WORK/$name-data.json" "v['bytes_read']")
  echo "$name: $bytes bytes of data; from checksums $from_tree, read $read (nodatacow $nocow, compressed $compressed);" \
       "with --read-data read $data_read"
  [ "$nocow" -eq $((4 << 20)) ] || fail "$name: nodatacow files not read as such ($nocow)"
  [ "$compressed" -gt 0 ] || fail "$name: compressed extents not read as such"
  [ "$from_tree" -ge $((bytes * 6 / 10)) ] || fail "$name: only $from_tree of $bytes bytes from checksums"
  [ "$read" -le $((bytes - from_tree)) ] || fail "$name: read $read bytes, more than those without checksums"
  json_field "$WORK/$name-data.json" "v['checksum_bytes']" | grep -qx 0 || fail "$name: --read-data used checksums"
  pass "$name: only data without usable checksums was read"

  "$BIN/oans-plan" --format fdupes "$WORK/$name.idx" > "$WORK/$name.groups"
  case $csum in
    crc32c|xxhash)
      same_group "$WORK/$name.groups" "$MNT/z/c1.txt" "$MNT/plain/c1.txt" \
        || fail "$name: a compressed file (read) and its plain copy (checksums) got different keys"
      pass "$name: sums computed over data read pair with the tree's" ;;
    *)
      same_group "$WORK/$name.groups" "$MNT/z/c1.txt" "$MNT/plain/c1.txt" \
        && fail "$name: a key of read data paired with a $csum key"
      same_group "$WORK/$name.groups" "$MNT/z/c1.txt" "$MNT/z/c2.txt" || fail "$name: compressed copies not grouped"
      pass "$name: keys of read data never pair with $csum keys" ;;
  esac
  same_maps "$WORK/$name.idx" "$WORK/$name-data.idx" "$WORK/$name.json" || fail "$name: maps from the trees differ"
  pass "$name: files mapped from the trees, unopened, have the records of the open files"
  if [ "$name" = crc32c ]; then
    # On a spinning disk the trees are read ahead before the walk, leaf by leaf in disk
    # order (DUP metadata on one device); the records are those of the open files all the same.
    "$BIN/oans-scan" --quiet --json --storage=hdd -o "$WORK/hdd.idx" "$MNT" > "$WORK/hdd.json" 2>&1
    [ "$(json_field "$WORK/hdd.json" "v['tree_ahead_leaves'] > 0 and not v['tree_ahead_cut']")" = True ] \
      || fail "$name: --storage=hdd did not read the trees ahead in disk order: $(cat "$WORK/hdd.json")"
    [ "$(json_field "$WORK/$name.json" "v['tree_ahead_bytes']")" = 0 ] || fail "$name: trees read ahead on an SSD"
    # The index says so, and the plan makes its rounds larger for it.
    # (Each listing goes to a file first: a reader leaving a pipe early would kill oans-cat.)
    "$BIN/oans-cat" "$WORK/hdd.idx" > "$WORK/hdd.jsonl"
    [[ "$(head -1 "$WORK/hdd.jsonl")" == *'"spinning":true'* ]] || fail "$name: the index does not say it spins"
    "$BIN/oans-plan" --quiet -o "$WORK/hdd.plan" "$WORK/hdd.idx"
    "$BIN/oans-cat" "$WORK/hdd.plan" > "$WORK/hdd-plan.jsonl"
    [[ "$(head -1 "$WORK/hdd-plan.jsonl")" == *'"round_size":50331648'* ]] || fail "$name: rounds not 48M on a spinning disk"
    "$BIN/oans-cat" "$WORK/$name.idx" > "$WORK/ssd.jsonl"
    [[ "$(head -1 "$WORK/ssd.jsonl")" == *'"spinning":false'* ]] || fail "$name: an SSD's index says it spins"
    same_maps "$WORK/hdd.idx" "$WORK/$name-data.idx" "$WORK/hdd.json" || fail "$name: maps after the read-ahead differ"
    pass "$name: on a spinning disk the trees are read ahead, and the records are the same"
    # A file with another mounted on it: the trees hold the one below, which apply would
    # never open; its record must be the mounted file's.
    rand_file "$WORK/cover.bin" 20000 39
    mount --bind "$WORK/cover.bin" "$MNT/plain/covered.bin"
    MOUNTS+=("$MNT/plain/covered.bin")
    "$BIN/oans-scan" --quiet -o "$WORK/covered.idx" "$MNT/plain"
    local want got
    want=$(stat -c %i "$MNT/plain/covered.bin")
    got=$("$BIN/oans-cat" "$WORK/covered.idx" | python3 -c '
import json, sys
for j in map(json.loads, sys.stdin):
    if j.get("type") == "file" and j["path"].endswith("/covered.bin"): print(j["ino"], j["size"])')
    umount "$MNT/plain/covered.bin"
    unset 'MOUNTS[${#MOUNTS[@]}-1]'
    [ "$got" = "$want 20000" ] || fail "$name: a file with another mounted on it recorded as '$got', not the mounted one (ino $want, 20000 bytes)"
    pass "$name: a file with another mounted on it is recorded as the mounted file"
  fi
  [ "$csum" = crc32c ] && { same_sums "$WORK/$name.idx" "$WORK/$name-data.idx" || fail "$name: sums differ"; }

  "$BIN/oans-plan" --quiet "$WORK/$name.idx" > "$WORK/$name.plan"
  if [ "$name" = crc32c ]; then
    # On a spinning disk apply first reads the extent and free space trees in disk order.
    "$BIN/oans-apply" --json --storage=hdd "$WORK/$name.plan" > "$WORK/apply.json" || fail "$name: apply failed"
    [ "$(json_field "$WORK/apply.json" "v['tree_ahead_bytes'] > 0")" = True ] \
      || fail "$name: apply --storage=hdd read no tree ahead: $(cat "$WORK/apply.json")"
  else
    "$BIN/oans-apply" --quiet "$WORK/$name.plan" || fail "$name: apply failed"
  fi
  sync
  after=$(checksums "$MNT")
  [ "$before" = "$after" ] || fail "$name: contents changed"
  pass "$name: every file's content is unchanged"
  local left
  left=$(unshared_files "$MNT/copy" 4096)
  [ -z "$left" ] || fail "$name: copies not shared: $left"
  [ "$(exclusive_bytes "$MNT/nocow/b.bin")" -eq 0 ] || fail "$name: nodatacow copy not shared"
  pass "$name: copies shared, nodatacow ones too"
  umount "$MNT"
  losetup -d "$LOOP"
  rm -f "$WORK/$name.img"
}

run_case crc32c crc32c
run_case crc32c zstd compress=zstd
run_case xxhash xxhash
run_case sha256 sha256
run_case blake2 blake2
