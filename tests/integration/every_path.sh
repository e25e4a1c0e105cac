#!/usr/bin/env bash
# One tree scanned through every path the scan has gives the same records, byte for byte
# as oans-cat prints them (only `reused`, which says how a record was made, left out):
# a cold walk with files mapped from btrfs's trees and finished in the walk (SSD
# order), the same with the kept files read after the walk in disk order and one reader
# (HDD: trees read ahead first) and in inode order, a walk reusing a previous index
# (--refresh-extents: no file finished from a stat), a scan following btrfs changes from
# an index of the empty tree (every file opened and built by the followed scan), and one
# following from that index with nothing changed (every record carried). With
# --read-data the SSD and HDD walks agree with each other, and with the others in all
# but the keys (sector sums included). The tree: plain, reflinked (FIEMAP says SHARED),
# compressed, nodatacow, inline, sparse, preallocated and hardlinked files.
source "$(dirname "$0")/lib.sh"
it_init "$1"
for t in mkfs.btrfs btrfs chattr fallocate; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
mkfs_mount btrfs 512M
T=$MNT/tree
mkdir "$T"
"$BIN/oans-scan" --quiet "$T" -o "$WORK/empty.idx"

make_tree "$T/plain"
cp -a --reflink=always "$T/plain" "$T/reflinked"
mkdir "$T/z" "$T/nocow" "$T/mixed"
btrfs property set "$T/z" compression zstd
python3 - "$T/z/text.txt" <<'PY'
import sys
open(sys.argv[1], "w").write("compressible text, over and over\n" * 40000)
PY
cp --reflink=never "$T/z/text.txt" "$T/z/text2.txt"
chattr +C "$T/nocow"
rand_file "$T/nocow/a.bin" $((1 << 20)) 41
python3 - "$T/mixed/holes.bin" <<'PY'
import random, sys
r = random.Random(42)
with open(sys.argv[1], "wb") as f:
    f.write(r.randbytes(1 << 20))
    f.seek(3 << 20)
    f.write(r.randbytes(300000))
PY
fallocate -o $((4 << 20)) -l $((1 << 20)) "$T/mixed/holes.bin"
: > "$T/mixed/empty"
sync

cat_files() {  # cat_files INDEX OUT: the file records, sorted, without `reused`
  "$BIN/oans-cat" --blocks "$1" | python3 -c '
import json, sys
out = []
for line in sys.stdin:
    j = json.loads(line)
    if j.get("type") != "file": continue
    j.pop("reused", None)
    out.append(json.dumps(j, sort_keys=True))
print("\n".join(sorted(out)))' > "$2"
}
without_keys() {  # without_keys IN OUT: the records without their keys
  python3 -c '
import json, sys
out = []
for line in open(sys.argv[1]):
    j = json.loads(line)
    for k in ("hash", "blocks", "key_kind"): j.pop(k, None)
    out.append(json.dumps(j, sort_keys=True))
print("\n".join(sorted(out)))' "$1" > "$2"
}
same() {  # same NAME A B: the two record lists are equal
  cmp -s "$2" "$3" || fail "$1: records differ from the cold walk's:
$(diff "$2" "$3" | head -20)"
  pass "$1: $(wc -l < "$2") records the same"
}
scan() {  # scan NAME ARGS...: an index WORK/NAME.idx and its records WORK/NAME.txt
  local name=$1; shift
  "$BIN/oans-scan" --json "$@" "$T" -o "$WORK/$name.idx" > "$WORK/$name.json" 2>&1 ||
    fail "$name: oans-scan failed: $(cat "$WORK/$name.json")"
  cat_files "$WORK/$name.idx" "$WORK/$name.txt"
}
field() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$1" "$2"; }

settle
scan cold --storage ssd
[ "$(grep -c '"path"' "$WORK/cold.txt")" -ge 100 ] || fail "the cold walk recorded too few files"
[ "$(field "$WORK/cold.json" tree_mapped)" -gt 0 ] || fail "the cold walk mapped no file from the trees"
grep -q '/reflinked/' "$WORK/cold.txt" || fail "no reflinked file recorded"
scan hdd --storage hdd
same "disk order, trees read ahead" "$WORK/cold.txt" "$WORK/hdd.txt"
scan inode --storage ssd --order inode
same "inode order" "$WORK/cold.txt" "$WORK/inode.txt"
scan reuse --storage ssd --previous "$WORK/cold.idx" --refresh-extents
[ "$(field "$WORK/reuse.json" reused)" -gt 0 ] || fail "the walk with --previous reused nothing"
[ "$(field "$WORK/reuse.json" not_followed)" = refresh_extents ] ||
  fail "the walk with --refresh-extents does not say why it did not follow: $(cat "$WORK/reuse.json")"
same "walk reusing the previous index" "$WORK/cold.txt" "$WORK/reuse.txt"
scan followed --storage ssd --previous "$WORK/empty.idx"
[ "$(field "$WORK/followed.json" followed)" = True ] || fail "the scan did not follow btrfs changes"
same "followed from the empty tree" "$WORK/cold.txt" "$WORK/followed.txt"
scan carried --storage ssd --previous "$WORK/followed.idx"
[ "$(field "$WORK/carried.json" followed)" = True ] || fail "the second scan did not follow btrfs changes"
same "followed, nothing changed" "$WORK/cold.txt" "$WORK/carried.txt"

scan data --storage ssd --read-data
scan data_hdd --storage hdd --read-data
same "--read-data, disk order against SSD order" "$WORK/data.txt" "$WORK/data_hdd.txt"
without_keys "$WORK/cold.txt" "$WORK/cold.nokeys"
without_keys "$WORK/data.txt" "$WORK/data.nokeys"
same "--read-data but for the keys" "$WORK/cold.nokeys" "$WORK/data.nokeys"
