#!/usr/bin/env bash
# Edges of the scan that follows btrfs changes (oans-scan --previous on btrfs, as root),
# each checked against a cold walk of the same tree, record for record:
#   - changes not yet committed (no sync before the scan): an append, an overwrite in place;
#   - a changed file below a directory whose path is longer than btrfs's path lookup
#     allows (4080 bytes): the scan says it cannot follow and walks;
#   - a file the previous scan could not read (its compressed data damaged on disk),
#     whose directory was renamed since: tried again at its new path;
#   - a filesystem mounted below the root, and unmounted again;
#   - a previous index whose keys are of another kind (--read-data);
#   - the root itself replaced by a new directory;
#   - a root that is a subvolume;
#   - the filesystem mounted again under another device number (st_dev).
source "$(dirname "$0")/lib.sh"
it_init "$1"
PY="$(dirname "$0")/follow_changes.py"
json_field() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$1" "$2"; }
# same_as_cold NAME PREV: a followed scan from PREV equals a cold scan; sets prev to it.
same_as_cold() {
  local rc=0
  "$BIN/oans-scan" --json --previous "$2" "$T" -o "$WORK/$1.idx" > "$WORK/$1.json" 2>&1 || rc=$?
  # 1: done, with files that could not be read (the damaged one below)
  [ $rc -le 1 ] || fail "$1: the scan failed: $(cat "$WORK/$1.json")"
  "$BIN/oans-scan" --quiet "$T" -o "$WORK/$1-cold.idx" 2>/dev/null || [ $? = 1 ]
  python3 "$PY" compare <("$BIN/oans-cat" --blocks "$WORK/$1.idx") <("$BIN/oans-cat" --blocks "$WORK/$1-cold.idx") ||
    fail "$1: the followed index differs from a cold scan's"
  prev=$WORK/$1.idx
}
followed() { json_field "$WORK/$1.json" followed; }
# lists IDX PATTERN: whether oans-cat's lines of IDX match PATTERN (grep -E).
lists() { "$BIN/oans-cat" "$1" > "$WORK/cat.txt" && grep -qE -- "$2" "$WORK/cat.txt"; }

mkfs_mount btrfs-zstd 512M
LOOP=${LOOPS[-1]}
T=$MNT/tree
mkdir -p "$T/bulk" "$T/d"
# Many files in many leaves, so that one file's change touches a leaf nothing else does.
python3 - "$T/bulk" <<'PY'
import os, sys
for k in range(4000):
    with open(os.path.join(sys.argv[1], f"b{k}"), "wb") as f: f.write(os.urandom(3000))
PY
rand_file "$T/bulk/mid" 40000 1
rand_file "$T/bulk/other" 40000 2
sync
"$BIN/oans-scan" --quiet "$T" -o "$WORK/g0.idx"
prev=$WORK/g0.idx

# Not committed: btrfs keeps the inode's new size in memory until a commit.
sync; sleep 1
echo more >> "$T/bulk/mid"
same_as_cold unsynced-append "$prev"
[ "$(followed unsynced-append)" = True ] || fail "unsynced append: not followed: $(cat "$WORK/unsynced-append.json")"
sync; sleep 1
dd if=/dev/urandom of="$T/bulk/other" bs=4096 count=1 conv=notrunc status=none
same_as_cold unsynced-overwrite "$prev"
[ "$(followed unsynced-overwrite)" = True ] || fail "unsynced overwrite: not followed"
pass "changes not yet committed, an append and an overwrite in place: seen as a cold scan sees them"

# A file below a directory path longer than BTRFS_IOC_INO_LOOKUP answers.
python3 - "$T" create <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_DIRECTORY)
for i in range(17):
    n = f"{i:02d}" + "x" * 250
    os.mkdir(n, dir_fd=fd)
    nfd = os.open(n, os.O_DIRECTORY, dir_fd=fd); os.close(fd); fd = nfd
f = os.open("deep", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd); os.write(f, os.urandom(20000)); os.close(f)
PY
sync
"$BIN/oans-scan" --quiet "$T" -o "$WORK/deep0.idx"
prev=$WORK/deep0.idx
# Many inodes between the deep directory and the file's leaf: only the file changes.
python3 - "$T" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_DIRECTORY)
for i in range(17):
    nfd = os.open(f"{i:02d}" + "x" * 250, os.O_DIRECTORY, dir_fd=fd); os.close(fd); fd = nfd
f = os.open("deep", os.O_WRONLY | os.O_APPEND, dir_fd=fd); os.write(f, b"more"); os.close(f)
PY
sync
same_as_cold deep "$prev"
lists "$WORK/deep.idx" '/deep"' || fail "the deep file has no record"
grep -q "File name too long" "$WORK/deep.json" || fail "the scan does not say why it walks: $(cat "$WORK/deep.json")"
pass "a changed file below a $(( 17 * 253 ))-byte directory path: walked, said why, recorded as a cold scan records it"
rm -rf "$T"/00x*

# A file whose compressed data is damaged on disk: the scan records the read error. Its
# directory is renamed; the next scan tries it again at its new path.
python3 -c "open('$T/d/bad','wb').write((b'damage me please ' * 20000)[:200000])"
sync
logical=$( (xfs_io -c fiemap "$T/d/bad" | awk 'NR == 2 { split($3, a, "[.]"); print a[1] * 512; exit }') || true)
physical=$( (btrfs-map-logical -l "$logical" "$LOOP" 2>/dev/null | awk '/physical/ { print $6; exit }') || true)
[ -n "$physical" ] || fail "no physical address for the damaged file"
dd if=/dev/urandom of="$LOOP" bs=1 seek=$((physical + 100)) count=64 conv=notrunc,fsync status=none
echo 3 > /proc/sys/vm/drop_caches
cat "$T/d/bad" > /dev/null 2>&1 && fail "the damaged file reads back"
"$BIN/oans-scan" --quiet --previous "$prev" "$T" -o "$WORK/bad0.idx" || true
lists "$WORK/bad0.idx" '/d/bad".*"error"' || fail "no read error recorded"
prev=$WORK/bad0.idx
mv "$T/d" "$T/d2"
sync
same_as_cold retried "$prev"
lists "$WORK/retried.idx" '/d2/bad"' || fail "the unreadable file is not recorded at its new path"
pass "a file the previous scan could not read, its directory renamed: tried again at its new path"

# A filesystem mounted below the root: the walk does not cross into it, and btrfs records
# neither the mount nor the unmount. Neither scan follows; both walk.
mkdir "$T/mp"
rand_file "$T/mp/under" 20000 4
sync
same_as_cold before-mount "$prev"
mount -t tmpfs none "$T/mp"
MOUNTS+=("$T/mp")
rand_file "$T/mp/on-tmpfs" 20000 5
same_as_cold mounted "$prev"
[ "$(followed mounted)" = False ] || fail "followed with a filesystem mounted below the root"
grep -q "mounted below a root" "$WORK/mounted.json" || fail "no notice of the mount: $(cat "$WORK/mounted.json")"
lists "$WORK/mounted.idx" 'on-tmpfs' && fail "the walk crossed into the mount"
umount "$T/mp"
same_as_cold unmounted "$prev"
[ "$(followed unmounted)" = False ] || fail "followed from an index made while something was mounted below the root"
lists "$WORK/unmounted.idx" '/mp/under"' || fail "the file under the mount point is missing"
same_as_cold after-mount "$prev"
[ "$(followed after-mount)" = True ] || fail "not followed again once nothing is mounted: $(cat "$WORK/after-mount.json")"
pass "a filesystem mounted below the root and unmounted again: walked both times, said why, then followed again"

# Keys of another kind: an index made with --read-data (keys of data) is followed by a
# scan without it (keys from btrfs checksums). Keys pair only with their kind, so no
# record's keys are carried: the files are hashed again, as a cold scan hashes them.
"$BIN/oans-scan" --quiet --read-data "$T" -o "$WORK/read-data.idx" 2>/dev/null || [ $? = 1 ]  # 1: the damaged file
same_as_cold other-keys "$WORK/read-data.idx"
[ "$(followed other-keys)" = False ] || fail "followed an index whose keys are of another kind"
grep -q "keys were made" "$WORK/other-keys.json" || fail "no notice of the other keys: $(cat "$WORK/other-keys.json")"
pass "a previous index made with --read-data: its keys not carried into a scan of btrfs checksums"

# The root replaced: its files moved away with the old directory, a new one in its place.
mv "$T" "$MNT/tree.old"
mkdir "$T"
rand_file "$T/fresh" 20000 3
sync
same_as_cold root-replaced "$prev"
[ "$(followed root-replaced)" = True ] || fail "root replaced: not followed: $(cat "$WORK/root-replaced.json")"
pass "the root replaced by a new directory: the new root's record, the new file, nothing of the old"

# The storage: a followed scan with --storage=auto keeps what the previous index says of
# the same roots (no seek test moving the head); one given --storage says what it was given.
rand_file "$T/fresh2" 20000 4
sync
"$BIN/oans-scan" --quiet --storage=hdd "$T" -o "$WORK/spin.idx"
"$BIN/oans-scan" --json --previous "$WORK/spin.idx" "$T" -o "$WORK/spin-followed.idx" > "$WORK/spin-followed.json" 2>&1
[ "$(followed spin-followed)" = True ] || fail "spinning: not followed: $(cat "$WORK/spin-followed.json")"
"$BIN/oans-cat" "$WORK/spin-followed.idx" > "$WORK/spin.jsonl"
[[ "$(head -1 "$WORK/spin.jsonl")" == *'"spinning":true'* ]] ||
  fail "a followed scan did not keep the previous index's spinning disk: $(head -1 "$WORK/spin.jsonl")"
[ "$(json_field "$WORK/spin-followed.json" storage)" = hdd ] || fail "spinning: the summary does not say hdd"
"$BIN/oans-scan" --json --storage=ssd --previous "$WORK/spin-followed.idx" "$T" -o "$WORK/ssd-followed.idx" \
  > "$WORK/ssd-followed.json" 2>&1
[ "$(followed ssd-followed)" = True ] || fail "--storage=ssd: not followed: $(cat "$WORK/ssd-followed.json")"
"$BIN/oans-cat" "$WORK/ssd-followed.idx" > "$WORK/ssd.jsonl"
[[ "$(head -1 "$WORK/ssd.jsonl")" == *'"spinning":false'* ]] || fail "--storage=ssd on a followed scan: the index says it spins"
[ "$(json_field "$WORK/ssd-followed.json" storage)" = ssd ] || fail "--storage=ssd: the summary does not say ssd"
pass "a followed scan keeps the previous index's storage with auto, and takes --storage when given"

# A root that is a subvolume (one share of a NAS): followed, not "not on btrfs". Its
# subvolume info comes with the answer 1 on Linux 6.18, success all the same.
btrfs subvolume create "$MNT/share" > /dev/null
rand_file "$MNT/share/a" 30000 5
rand_file "$MNT/share/b" 30000 6
sync
"$BIN/oans-scan" --quiet "$MNT/share" -o "$WORK/share.idx"
rand_file "$MNT/share/c" 30000 7
sync
T=$MNT/share
same_as_cold share-followed "$WORK/share.idx"
[ "$(followed share-followed)" = True ] || fail "a subvolume root: not followed: $(cat "$WORK/share-followed.json")"
pass "a root that is a subvolume is followed, its index the same as a cold scan's"

# Mounted again under another device number (another mount took the old one meanwhile,
# as after a reboot): followed, its records carrying the new number, as a walk's do.
"$BIN/oans-scan" --quiet "$T" -o "$WORK/dev0.idx"
before=$(stat -c %d "$T")
umount "$MNT"
mkdir -p "$WORK/holder"
mount -t tmpfs none "$WORK/holder"
MOUNTS+=("$WORK/holder")
mount -o compress=zstd "$LOOP" "$MNT"
after=$(stat -c %d "$T")
[ "$before" != "$after" ] || fail "the filesystem came back under the same device number ($after)"
same_as_cold remounted "$WORK/dev0.idx"
[ "$(followed remounted)" = True ] || fail "mounted again: not followed: $(cat "$WORK/remounted.json")"
"$BIN/oans-cat" "$WORK/remounted.idx" | python3 -c '
import json, sys
dev = int(sys.argv[1])
old = [j["path"] for j in map(json.loads, sys.stdin) if j.get("type") == "file" and j["dev"] != dev]
sys.exit(f"records with the old device number: {old[:3]}" if old else 0)' "$after" ||
  fail "a followed scan carried the device number of the previous mount"
"$BIN/oans-cat" "$WORK/remounted.idx" | head -1 | grep -q '"same_as_followed":false' ||
  fail "the index after a mount under another number says its records are the previous index's"
pass "mounted again under another device number ($before, then $after): followed, every record with the new one"
