#!/usr/bin/env bash
# The scan's census of references (lib/btrfs/backrefs.h) read from the extent items gives
# what BTRFS_IOC_LOGICAL_INO_V2 gives for every extent ($OANS_CENSUS_LOOK_UP_ALL=1): with
# reflinked copies in one subvolume, in another and in a read-only one, an extent held
# twice by one file, one with fifty copies (keyed references after its item), a
# snapshotted subvolume left alone (its old extents held through shared tree blocks,
# which no reference names) and one written after its snapshot (shared references).
# Checked: identical extents in oans-cat, the items counted most extents' references,
# and the expected figures for the copied files.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 600M
mount -o remount,noatime "$MNT"  # reading a file leaves its leaf alone
for v in vol vol2 other ro; do btrfs -q subvolume create "$MNT/$v"; done
mkdir -p "$MNT/vol/old" "$MNT/vol2/old" "$MNT/snaps"
for i in $(seq 1 12); do
  rand_file "$MNT/vol/old/f$i" $((96 << 10)) "$i"
  rand_file "$MNT/vol2/old/f$i" $((96 << 10)) $((100 + i))
done
# Small files inline in the trees: each subvolume's tree grows past one leaf, so that a
# snapshot shares its leaves (a one-leaf tree is copied whole, references and all).
python3 - "$MNT/vol/small" "$MNT/vol2/small" <<'PY'
import os, sys
for d in sys.argv[1:]:
    os.makedirs(d)
    for i in range(300):
        with open(os.path.join(d, "s%03d" % i), "wb") as f:
            f.write(bytes([i % 251]) * 1500)
PY
mkdir "$MNT/vol/new"  # its entries in vol's last leaf, away from old/'s
btrfs filesystem sync "$MNT" >/dev/null
btrfs -q subvolume snapshot -r "$MNT/vol" "$MNT/snaps/vol"
btrfs -q subvolume snapshot -r "$MNT/vol2" "$MNT/snaps/vol2"
btrfs filesystem sync "$MNT" >/dev/null
# Written after the snapshots: vol's first leaves stay shared with its snapshot; vol2's
# are copied, their references made shared.
for i in $(seq 1 12); do rand_file "$MNT/vol/new/g$i" $((96 << 10)) $((200 + i)); done
rand_file "$MNT/vol2/old/added" $((96 << 10)) 300
touch "$MNT/vol2/old/"f*
cp --reflink=always "$MNT/vol/new/g1" "$MNT/vol/new/g1.a"
cp --reflink=always "$MNT/vol/new/g1" "$MNT/vol/new/g1.b"
cp --reflink=always "$MNT/vol/new/g1" "$MNT/other/g1"
cp --reflink=always "$MNT/vol/new/g1" "$MNT/ro/g1"
cp --reflink=always "$MNT/vol/old/f1" "$MNT/other/f1"
mkdir "$MNT/other/many"
for i in $(seq 1 50); do cp --reflink=always "$MNT/vol/new/g2" "$MNT/other/many/g2.$i"; done
# One file holding its own extent twice.
xfs_io -c "reflink $MNT/vol/new/g3 0 $((96 << 10)) $((96 << 10))" "$MNT/vol/new/g3" >/dev/null
btrfs property set -ts "$MNT/ro" ro true
btrfs filesystem sync "$MNT" >/dev/null
dump=$(btrfs inspect-internal dump-tree -t extent "${LOOPS[0]}")
grep -Eq "key \([0-9]+ EXTENT_DATA_REF" <<<"$dump" || fail "no keyed EXTENT_DATA_REF item: the test does not cover them"
grep -Eq "(key \([0-9]+ SHARED_DATA_REF|shared data backref)" <<<"$dump" || fail "no shared data reference: the test does not cover them"

"$BIN/oans-scan" --quiet --json -o "$WORK/items.idx" "$MNT" > "$WORK/items.json"
OANS_CENSUS_LOOK_UP_ALL=1 "$BIN/oans-scan" --quiet --json -o "$WORK/ioctl.idx" "$MNT" > "$WORK/ioctl.json"
"$BIN/oans-cat" --extents "$WORK/items.idx" | grep '^{"type":"extent"' > "$WORK/items.ext"
"$BIN/oans-cat" --extents "$WORK/ioctl.idx" | grep '^{"type":"extent"' > "$WORK/ioctl.ext"
n=$(json_field "$WORK/items.json" census_extents)
looked=$(json_field "$WORK/items.json" census_looked_up)
echo "census: $n extents, $looked by LOGICAL_INO ($(json_field "$WORK/ioctl.json" census_looked_up) when all)"
diff "$WORK/ioctl.ext" "$WORK/items.ext" || fail "the extent items' census differs from LOGICAL_INO's"
[ "$n" -ge 37 ] && [ "$(wc -l < "$WORK/items.ext")" = "$n" ] || fail "$n extents listed, $(wc -l < "$WORK/items.ext") printed"
[ "$(json_field "$WORK/ioctl.json" census_looked_up)" = "$n" ] || fail "OANS_CENSUS_LOOK_UP_ALL=1 did not look every extent up"
# Looked up: the snapshotted subvolumes' old extents; from the items: the new ones.
[ "$looked" -ge 24 ] && [ "$looked" -le $((n - 13)) ] || fail "$looked of $n extents looked up"

# refs_of FILE: the refs and ro_refs of the extent at FILE's first byte.
"$BIN/oans-cat" --extents "$WORK/items.idx" > "$WORK/items.cat"
refs_of() {
  python3 - "$WORK/items.cat" "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
f = [l for l in lines if l["type"] == "file" and l["path"] == sys.argv[2]]
if not f:
    sys.exit("no record of %s; records like %s" % (sys.argv[2], next(l for l in lines if l["type"] == "file")["path"]))
f = f[0]
at = f["extents"][0][1]
x = [e for e in lines if e["type"] == "extent" and e["bytenr"] <= at < e["bytenr"] + e["disk_bytes"]]
print(x[0]["refs"], x[0]["ro_refs"])
PY
}
[ "$(refs_of "$MNT/vol/new/g1")" = "5 1" ] || fail "g1: $(refs_of "$MNT/vol/new/g1"), not 5 references, 1 read-only"
[ "$(refs_of "$MNT/vol/new/g2")" = "51 0" ] || fail "g2: $(refs_of "$MNT/vol/new/g2"), not 51 references"
[ "$(refs_of "$MNT/vol/new/g3")" = "1 0" ] || fail "g3: $(refs_of "$MNT/vol/new/g3"), not 1 reference"
[ "$(refs_of "$MNT/vol/old/f1")" = "3 1" ] || fail "f1: $(refs_of "$MNT/vol/old/f1"), not 3 references, 1 read-only"
[ "$(refs_of "$MNT/vol/old/f2")" = "2 1" ] || fail "f2: $(refs_of "$MNT/vol/old/f2"), not 2 references, 1 read-only"
pass "census of $n extents: $looked by LOGICAL_INO, the rest from their items, the same figures"
