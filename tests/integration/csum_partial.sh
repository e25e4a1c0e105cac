#!/usr/bin/env bash
# 4 KiB partial duplicates found from btrfs checksums and shared where that frees space,
# at any 4 KiB alignment, each case on a filesystem of its own so that what it frees is
# measured by the filesystem's own allocation (`btrfs filesystem df`), not only by what
# files reference (btrfs keeps an extent whole while any part of it is referenced):
#  - vm:    two 256 MiB images, the second a copy with 1% of its 4 KiB blocks then
#           rewritten in place at random places: the copy's old extents go free and it
#           keeps at most 8 MiB exclusive;
#  - shift: a file of 64 MiB and 1000 bytes (its end in the middle of a sector) and a
#           copy of it behind a 12 KiB header: one of them goes free except for at most
#           5% of it;
#  - twice: a file holding the same 1 MiB twice, 40 KiB apart, the second copy written
#           later as an extent of its own: that extent goes free;
#  - fresh: two 256 MiB files differing in 1% of their blocks, each written in one go:
#           sharing their common parts alone would free no extent. With --max-rewrite 0
#           nothing is planned; by default the differing blocks are first copied into
#           new extents (about 1%), and then one file's old extents go free;
#  - snap:  the same in a subvolume with a snapshot outside the scanned root: the
#           snapshot keeps the old extents, so the default plan leaves the file alone,
#           and with --snapshots=all apply does not rewrite (FIEMAP says shared): the
#           filesystem's allocation does not grow;
#  - pieces: the same as fresh (64 MiB), one file written 1 MiB at a time out of order:
#           the rewrite is planned the way that frees the most, not dropped for the few
#           small extents sharing alone would free.
# Every file's content is checked before and after; the scan reads none of this data.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v btrfs >/dev/null || { echo "SKIP: btrfs-progs not installed"; exit 77; }

# rewrite_blocks FILE SEED: 1% of FILE's 4 KiB blocks, scattered, rewritten in place
rewrite_blocks() {
  python3 - "$1" "$2" <<'PY'
import os, random, sys
r = random.Random(int(sys.argv[2]))
fd = os.open(sys.argv[1], os.O_WRONLY)
blocks = os.fstat(fd).st_size // 4096
for b in r.sample(range(blocks), blocks // 100):
    os.pwrite(fd, r.randbytes(4096), b * 4096)
os.fsync(fd)
os.close(fd)
PY
}

# written_apart A B SIZE SEED: A of SIZE random bytes, B a copy of it with 1% of its
# blocks changed, each written in one go (B is made outside and copied in)
written_apart() {
  rand_file "$1" "$3" "$4"
  cp --reflink=never "$1" "$WORK/apart.tmp"
  rewrite_blocks "$WORK/apart.tmp" $(($4 + 1))
  cp --reflink=never "$WORK/apart.tmp" "$2"
  rm "$WORK/apart.tmp"
}

mkfs_mount btrfs 1200M vm
VM=$MNT
rand_file "$VM/vm-a.img" $((256 << 20)) 41
cp --reflink=never "$VM/vm-a.img" "$VM/vm-b.img"
sync
rewrite_blocks "$VM/vm-b.img" 42

mkfs_mount btrfs 400M shift
SHIFT=$MNT
rand_file "$WORK/body" $(((64 << 20) + 1000)) 43
rand_file "$WORK/head" $((12 << 10)) 44
cp "$WORK/body" "$SHIFT/body.bin"
cat "$WORK/head" "$WORK/body" > "$SHIFT/shifted.bin"

mkfs_mount btrfs 300M twice
TWICE=$MNT
rand_file "$WORK/once" $((1 << 20)) 45
rand_file "$WORK/gap" $((40 << 10)) 46
cat "$WORK/once" "$WORK/gap" > "$TWICE/twice.bin"
sync
rand_file "$TWICE/between" $((1 << 20)) 47  # so that the next write lands elsewhere
sync
cat "$WORK/once" >> "$TWICE/twice.bin"

mkfs_mount btrfs 1200M fresh
FRESH=$MNT
written_apart "$FRESH/fresh-a.img" "$FRESH/fresh-b.img" $((256 << 20)) 48
sync

declare -A used
for m in "$VM" "$SHIFT" "$TWICE" "$FRESH"; do
  used[$m]=$(data_used "$m")
  checksums "$m" > "$WORK/before-$(basename "$m")"
done
fiemap_of() { filefrag -v -b1 "$1" | awk '/^ *[0-9]+:/ {print $2, $4, $6}'; }
echo "before: vm-b.img exclusive $(exclusive_bytes "$VM/vm-b.img"), in $(fiemap_of "$VM/vm-b.img" | wc -l) extents"

"$BIN/oans-scan" --quiet --json -o "$WORK/a.idx" "$VM" "$SHIFT" "$TWICE" "$FRESH" > "$WORK/scan.json" 2>&1
read_bytes=$(python3 -c "import json; print(json.load(open('$WORK/scan.json'))['bytes_read'])")
[ "$read_bytes" -le $((1 << 20)) ] || fail "the scan read $read_bytes bytes"
pass "the scan read $read_bytes bytes of data"
stat_of() { python3 -c "import json; print(json.load(open('$1'))['$2'])"; }
"$BIN/oans-plan" --json --max-rewrite 0 "$WORK/a.idx" > /dev/null 2> "$WORK/plan0.json"
left=$(stat_of "$WORK/plan0.json" partial_left_bytes)
[ "$left" -ge $((240 << 20)) ] || fail "only $left bytes of partial duplicates were left alone (fresh: about 250 MiB)"
[ "$(stat_of "$WORK/plan0.json" rewrite_bytes)" -eq 0 ] || fail "--max-rewrite 0 planned a rewrite"
pass "--max-rewrite 0: $left bytes of partial duplicates left alone, sharing them frees no extent"
"$BIN/oans-plan" --json "$WORK/a.idx" > "$WORK/plan.capnp" 2> "$WORK/plan.json"
cat "$WORK/plan.json"
rewrite=$(stat_of "$WORK/plan.json" rewrite_bytes)
[ "$rewrite" -ge $((1 << 20)) ] && [ "$rewrite" -le $(((256 << 20) / 10)) ] ||
  fail "the files written in one go: $rewrite bytes to rewrite, expected 1% to 10% of 256 MiB"
pass "the files written in one go: $rewrite bytes to rewrite first"
"$BIN/oans-apply" "$WORK/plan.capnp" 2> "$WORK/apply.log" || { cat "$WORK/apply.log"; fail "apply failed"; }
cat "$WORK/apply.log"

for m in "$VM" "$SHIFT" "$TWICE" "$FRESH"; do
  checksums "$m" | cmp -s - "$WORK/before-$(basename "$m")" || fail "contents changed in $m"
done
pass "every file's content is unchanged"

freed() { echo $(( used[$1] - $(data_used "$1") )); }
freed_vm=$(freed "$VM")
excl_b=$(exclusive_bytes "$VM/vm-b.img")
echo "vm: freed $freed_vm bytes; vm-b.img keeps $excl_b exclusive"
[ "$freed_vm" -ge $(((256 - 8) << 20)) ] || fail "the changed image's old extents were not freed (freed $freed_vm bytes)"
[ "$excl_b" -le $((8 << 20)) ] || fail "the changed image keeps $excl_b bytes exclusive (more than 8 MiB)"
pass "the image with 1% of its blocks rewritten: $freed_vm bytes freed, $excl_b kept exclusive"

freed_s=$(freed "$SHIFT")
echo "shift: freed $freed_s bytes"
[ "$freed_s" -ge $(((64 << 20) * 95 / 100)) ] || fail "the copy shifted by 12 KiB freed only $freed_s bytes"
pass "the copy shifted by 12 KiB: $freed_s bytes freed"

freed_t=$(freed "$TWICE")
echo "twice: freed $freed_t bytes"
[ "$freed_t" -ge $((1 << 20)) ] || fail "the repeat inside one file freed only $freed_t bytes"
pass "a repeat inside one file, in an extent of its own: $freed_t bytes freed"

rewritten=$(grep -o 'rewrote [^,]*' "$WORK/apply.log" || true)
[ -n "$rewritten" ] || fail "apply's summary does not say what it rewrote"
freed_f=$(freed "$FRESH")
echo "fresh: freed $freed_f bytes, $rewrite rewritten ($rewritten)"
# The old extents of one file go free, less the new extents of what was rewritten.
[ "$freed_f" -ge $(((256 << 20) - rewrite - (1 << 20))) ] ||
  fail "the files written in one go freed only $freed_f bytes ($rewrite rewritten)"
pass "files written in one go, 1% apart: $freed_f bytes freed after rewriting $rewrite"

# A snapshot keeps the extents: rewriting would only add the copies.
mkfs_mount btrfs 600M snap
SNAP=$MNT
btrfs -q subvolume create "$SNAP/vol"
written_apart "$SNAP/vol/a.img" "$SNAP/vol/b.img" $((64 << 20)) 50
sync
btrfs -q subvolume snapshot -r "$SNAP/vol" "$SNAP/vol-snapshot"
used_snap=$(data_used "$SNAP")
checksums "$SNAP" > "$WORK/before-snap"
"$BIN/oans-scan" --quiet -o "$WORK/s.idx" "$SNAP/vol"
# The default plan sees the snapshot's references (the scan's census) and leaves the
# file alone: nothing it would do frees space now.
"$BIN/oans-plan" --json "$WORK/s.idx" > /dev/null 2> "$WORK/s-auto.json"
[ "$(json_field "$WORK/s-auto.json" planned_bytes)" = 0 ] && [ "$(json_field "$WORK/s-auto.json" net_bytes)" = 0 ] ||
  fail "snap: the default plan shares into a file whose extents the snapshot keeps: $(cat "$WORK/s-auto.json")"
# With --snapshots=all the plan shares and rewrites as it would without a snapshot, and
# apply does not rewrite what FIEMAP calls shared.
"$BIN/oans-plan" --json --snapshots=all "$WORK/s.idx" > "$WORK/s.plan" 2> "$WORK/s.json"
[ "$(stat_of "$WORK/s.json" rewrite_bytes)" -gt 0 ] || fail "snap: no rewrite planned with --snapshots=all"
"$BIN/oans-apply" "$WORK/s.plan" 2> "$WORK/s.log" ||
  fail "snap: apply exited $?, expected 0 (a rewrite not made is not data left unshared): $(cat "$WORK/s.log")"
cat "$WORK/s.log"
grep -q "left .*: not rewritten: shared with another file or a snapshot" "$WORK/s.log" ||
  fail "snap: the rewrites not made are not counted"
[ "$(grep -c 'b.img: not rewritten' "$WORK/s.log")" -le 5 ] || fail "snap: a notice for every operation"
checksums "$SNAP" | cmp -s - "$WORK/before-snap" || fail "contents changed in $SNAP"
grown=$(( $(data_used "$SNAP") - used_snap ))
[ "$grown" -le 0 ] || fail "snap: the filesystem's data grew by $grown bytes"
pass "an extent a snapshot keeps is not rewritten: allocation changed by $grown bytes"

# Files written in pieces: one written 1 MiB at a time out of order, a commit after each
# (a few of its extents hold no changed block), the other in one go. Sharing without a
# rewrite frees only those few small extents; rewriting the 1% that differs frees the
# other file's whole extent, and is planned that way.
mkfs_mount btrfs 400M pieces
PIECES=$MNT
python3 - "$PIECES/pieces-a.img" "$PIECES/pieces-b.img" <<'PY'
import os, random, sys
size = 64 << 20
r = random.Random(50)
a = r.randbytes(size)
b = bytearray(a)
for x in r.sample(range(size // 4096), size // 4096 // 100):
    b[x * 4096:(x + 1) * 4096] = r.randbytes(4096)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
offsets = list(range(0, size, 1 << 20))
r.shuffle(offsets)
for o in offsets:
    os.pwrite(fd, a[o:o + (1 << 20)], o)
    os.fsync(fd)
os.close(fd)
with open(sys.argv[2], "wb") as f:
    f.write(b)
PY
sync
used_p=$(data_used "$PIECES")
checksums "$PIECES" > "$WORK/before-pieces"
"$BIN/oans-scan" --quiet -o "$WORK/pieces.idx" "$PIECES"
"$BIN/oans-plan" --json "$WORK/pieces.idx" > "$WORK/pieces.plan" 2> "$WORK/pieces.json"
rewrite_p=$(stat_of "$WORK/pieces.json" rewrite_bytes)
[ "$rewrite_p" -gt 0 ] || fail "a file written in pieces: no rewrite planned: $(cat "$WORK/pieces.json")"
"$BIN/oans-apply" --quiet "$WORK/pieces.plan" || fail "apply failed (pieces)"
checksums "$PIECES" | cmp -s - "$WORK/before-pieces" || fail "contents changed in $PIECES"
freed_p=$((used_p - $(data_used "$PIECES")))
[ "$freed_p" -ge $(((64 - 8) << 20)) ] || fail "a file written in pieces: only $freed_p bytes freed"
pass "a file written in pieces beside one written in one go: $rewrite_p bytes rewritten, $freed_p freed"
