#!/usr/bin/env bash
# 4 KiB partial duplicates found from btrfs checksums and shared, at any 4 KiB alignment:
#  - two 256 MiB images, one with 1% of its 4 KiB blocks rewritten at random places:
#    after one scan, plan and apply the changed one keeps at most 8 MiB exclusive;
#  - a 64 MiB file and a copy of it behind a 12 KiB header: the copy is shared except
#    for at most 5% of it;
#  - a file holding the same 1 MiB twice, 40 KiB apart: the second copy is shared.
# Every file's content is checked before and after; the scan reads none of this data.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v btrfs >/dev/null || { echo "SKIP: btrfs-progs not installed"; exit 77; }
mkfs_mount btrfs 1200M
rand_file "$MNT/vm-a.img" $((256 << 20)) 41
cp --reflink=never "$MNT/vm-a.img" "$MNT/vm-b.img"
python3 - "$MNT/vm-b.img" <<'PY'
import os, random, sys
r = random.Random(42)
fd = os.open(sys.argv[1], os.O_WRONLY)
blocks = (256 << 20) // 4096
for b in r.sample(range(blocks), blocks // 100):  # 1% of the blocks, scattered
    os.pwrite(fd, r.randbytes(4096), b * 4096)
os.fsync(fd)
os.close(fd)
PY
rand_file "$WORK/body" $((64 << 20)) 43
rand_file "$WORK/head" $((12 << 10)) 44
cp "$WORK/body" "$MNT/body.bin"
cat "$WORK/head" "$WORK/body" > "$MNT/shifted.bin"
rand_file "$WORK/once" $((1 << 20)) 45
rand_file "$WORK/gap" $((40 << 10)) 46
cat "$WORK/once" "$WORK/gap" "$WORK/once" > "$MNT/twice.bin"
sync
before=$(checksums "$MNT")
echo "before: vm-b.img exclusive $(exclusive_bytes "$MNT/vm-b.img"), shifted.bin $(exclusive_bytes "$MNT/shifted.bin")"

"$BIN/oans-scan" --quiet --json -o "$WORK/a.idx" "$MNT" 2> "$WORK/scan.json"
read_bytes=$(python3 -c "import json; print(json.load(open('$WORK/scan.json'))['bytes_read'])")
[ "$read_bytes" -le $((1 << 20)) ] || fail "the scan read $read_bytes bytes"
pass "the scan read $read_bytes bytes of data"
"$BIN/oans-plan" --stats "$WORK/a.idx" > "$WORK/plan.capnp"
"$BIN/oans-apply" "$WORK/plan.capnp" 2> "$WORK/apply.log" || { cat "$WORK/apply.log"; fail "apply failed"; }
cat "$WORK/apply.log"
sync

after=$(checksums "$MNT")
[ "$before" = "$after" ] || fail "contents changed"
pass "every file's content is unchanged"

excl_b=$(exclusive_bytes "$MNT/vm-b.img")
echo "vm-b.img exclusive after one cycle: $excl_b"
[ "$excl_b" -le $((8 << 20)) ] || fail "the changed image keeps $excl_b bytes exclusive (more than 8 MiB)"
pass "the image with 1% of its blocks changed keeps $excl_b bytes exclusive"

excl_s=$(exclusive_bytes "$MNT/shifted.bin")
size_s=$(stat -c %s "$MNT/shifted.bin")
echo "shifted.bin exclusive after: $excl_s of $size_s"
[ "$excl_s" -le $((size_s / 20)) ] || fail "the copy shifted by 12 KiB keeps $excl_s of $size_s bytes exclusive"
pass "the copy shifted by 12 KiB keeps $excl_s bytes exclusive"

excl_t=$(exclusive_bytes "$MNT/twice.bin")
[ "$excl_t" -le $(((1 << 20) + (40 << 10))) ] || fail "twice.bin keeps $excl_t bytes exclusive"
pass "a repeat inside one file is shared ($excl_t bytes exclusive)"
