#!/usr/bin/env bash
# On a spinning disk, the scan reads XFS's inode tables once, in disk order, before its
# walk (bulkstat), and a directory's blocks in disk order before listing it: every inode
# in use is met, and the index is the one the scan makes without them, record for
# record. On an SSD it does not. Counted with strace. Apply, given the plan of the
# spinning disk's index, reads them first too, lists the directories above the plan's
# files (and no other), and dedupes as it would.
source "$(dirname "$0")/lib.sh"
it_init "$1"
for t in mkfs.xfs strace; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
# LeakSanitizer cannot run under ptrace.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mkfs_mount xfs 512M
tree_and_copy
python3 - "$MNT/many" <<'PY'
import os, sys
for d in range(40):  # directories in several allocation groups, files in each
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for f in range(50):
        with open(f"{sys.argv[1]}/d{d}/f{f}", "w") as out:
            out.write(f"{d} {f}\n" * (f + 1))
os.makedirs(f"{sys.argv[1]}/wide")
for f in range(600):  # a directory grown block by block: XFS lays them out downwards
    with open(f"{sys.argv[1]}/wide/a-rather-long-file-name-that-fills-blocks-{f}", "w") as out:
        out.write(f"{f}\n")
# The name each directory's leaf block is read ahead by, planted: a file like any other
# for the walk, and in a directory of many blocks, a symlink to a file outside the tree
# (the lookup follows nothing).
with open(f"{sys.argv[1]}/d0/.oans-walk-lookup-ahead", "w") as out:
    out.write("an ordinary file\n")
os.symlink("/etc/hostname", f"{sys.argv[1]}/wide/.oans-walk-lookup-ahead")
PY
sync
before=$(checksums "$MNT")
# cat_files INDEX: the file records, sorted.
cat_files() {
  "$BIN/oans-cat" --blocks "$1" | python3 -c '
import json, sys
print("\n".join(sorted(l.strip() for l in sys.stdin if json.loads(l).get("type") in ("file", "dir"))))'
}
# bulkstat TRACE: the XFS_IOC_BULKSTAT calls (_IOC(_IOC_READ, 0x58, 0x7f, ...)) made.
bulkstat() { grep -c 'ioctl([0-9]*, _IOC(_IOC_READ, 0x58, 0x7f\|XFS_IOC_BULKSTAT' "$1" || true; }

for storage in hdd ssd; do
  strace -f -e trace=ioctl,statx,newfstatat -o "$WORK/$storage.trace" "$BIN/oans-scan" --quiet --storage=$storage \
    --summary-file "$WORK/$storage.json" -o "$WORK/$storage.idx" "$MNT" || fail "$storage: oans-scan failed"
done
used=$(df --output=iused "$MNT" | tail -1)
inodes=$(json_field "$WORK/hdd.json" inode_tables_inodes)
entries=$(find "$MNT" | wc -l)
echo "hdd: $inodes inodes swept in $(bulkstat "$WORK/hdd.trace") calls; $used in use, $entries names below the root"
[ "$inodes" -ge "$((entries - 2))" ] && [ "$inodes" -le "$used" ] ||
  fail "hdd: $inodes inodes swept, not every one in use ($used, $entries names)"
[ "$(bulkstat "$WORK/hdd.trace")" -ge 1 ] || fail "hdd: no bulkstat call traced"
[ "$(json_field "$WORK/hdd.json" inode_tables_bytes)" -ge "$((inodes * 256))" ] || fail "hdd: table bytes too few"
pass "on a spinning disk the scan read the inode tables of all $inodes inodes in use first"
[ "$(bulkstat "$WORK/ssd.trace")" = 0 ] && [ "$(json_field "$WORK/ssd.json" inode_tables_inodes)" = 0 ] ||
  fail "ssd: the inode tables were swept"
pass "on an SSD they were not"
# A directory whose blocks lie out of order is read in disk order before its listing;
# the records stay the same (compared below).
[ "$(json_field "$WORK/hdd.json" dirs_in_disk_order)" -ge 1 ] ||
  fail "hdd: no directory read in disk order ($(json_field "$WORK/hdd.json" dirs_in_disk_order))"
[ "$(json_field "$WORK/ssd.json" dirs_in_disk_order)" = 0 ] || fail "ssd: directories read in disk order"
pass "on a spinning disk $(json_field "$WORK/hdd.json" dirs_in_disk_order) directories' blocks were read in disk order first"
# Each directory's leaf block is read as the walk lists it, by one lookup of a name
# (fstatat; the walk's own stat calls, of the planted entries too, are statx).
lookups() { grep -c 'newfstatat([0-9]*, "\.oans-walk-lookup-ahead"' "$1" || true; }
ndirs=$(find "$MNT" -type d | wc -l)
[ "$(lookups "$WORK/hdd.trace")" -ge "$ndirs" ] ||
  fail "hdd: $(lookups "$WORK/hdd.trace") lookups ahead for $ndirs directories"
[ "$(lookups "$WORK/ssd.trace")" = 0 ] || fail "ssd: lookups ahead made"
"$BIN/oans-cat" "$WORK/hdd.idx" | grep -q '"path":"[^"]*/d0/\.oans-walk-lookup-ahead"' ||
  fail "hdd: the planted file of the lookup's name is not recorded"
! "$BIN/oans-cat" "$WORK/hdd.idx" | grep -q '/etc/hostname\|wide/\.oans-walk-lookup-ahead"' ||
  fail "hdd: the planted symlink was followed or recorded"
pass "each of the $ndirs directories' leaf blocks read ahead by a lookup; the name planted is a file like any other"
cat_files "$WORK/hdd.idx" > "$WORK/hdd.txt"
cat_files "$WORK/ssd.idx" > "$WORK/ssd.txt"
cmp -s "$WORK/hdd.txt" "$WORK/ssd.txt" || fail "the indexes differ:
$(diff "$WORK/ssd.txt" "$WORK/hdd.txt" | head -10)"
pass "both indexes hold the same $(wc -l < "$WORK/hdd.txt") records"
"$BIN/oans-plan" --quiet "$WORK/hdd.idx" > "$WORK/plan.capnp" || fail "plan"
sync
echo 3 > /proc/sys/vm/drop_caches  # the inode tables are read again, by apply
strace -f -e trace=ioctl -o "$WORK/apply.trace" "$BIN/oans-apply" --quiet --summary-file "$WORK/apply.json" \
  "$WORK/plan.capnp" || fail "apply failed"
[ "$(bulkstat "$WORK/apply.trace")" -ge 1 ] && [ "$(json_field "$WORK/apply.json" inode_tables_bytes)" -gt 0 ] ||
  fail "apply did not read the inode tables first"
# The directories above the plan's files: orig, copy and their subdirectories, and the root.
dirs=$(json_field "$WORK/apply.json" dirs_ahead)
want=$(find "$MNT/orig" "$MNT/copy" -type d | wc -l)
[ "$dirs" -eq "$((want + 1))" ] || fail "apply listed $dirs directories ahead, not the $((want + 1)) above its files"
pass "apply listed the $dirs directories above the plan's files first"
[ "$(json_field "$WORK/apply.json" bytes_deduped)" -gt 0 ] || fail "apply deduped nothing"
pass "apply read them first too, then deduped $(json_field "$WORK/apply.json" bytes_deduped) bytes"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "every file's content is unchanged"
left=$(unshared_files "$MNT/copy" 4096)
[ -z "$left" ] || fail "files not fully shared after apply: $left"
pass "every copied file of 4 KiB or more is fully shared"
