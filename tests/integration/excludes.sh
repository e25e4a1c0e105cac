#!/usr/bin/env bash
# Excludes as a NAS operator writes them: a glob with a '/' is relative to each root
# (photos/cache excludes ROOT/photos/cache in every root, not a photos/cache deeper
# down); a glob that matched nothing is named in a warning (the presets' are not);
# --exclude-preset nas leaves out @eaDir, #recycle, #snapshot, .snapshots and .Trash-*;
# entering read-only btrfs snapshots is said once however many there are; oans run
# stores --exclude-preset.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 256M
share=$MNT/share
btrfs -q subvolume create "$share"
rand_file "$WORK/data" 200000 1
for d in photos photos/cache photos/@eaDir deep/photos/cache "#recycle" ".Trash-1000/files" keep; do
  mkdir -p "$share/$d"
  cp "$WORK/data" "$share/$d/f.bin"
done
mkdir -p "$MNT/other/photos/cache" "$share/.snapshots"
cp "$WORK/data" "$MNT/other/photos/cache/f.bin"
cp "$WORK/data" "$MNT/other/g.bin"
btrfs -q subvolume snapshot -r "$share" "$share/.snapshots/1"
btrfs -q subvolume snapshot -r "$share" "$share/backup-a"
btrfs -q subvolume snapshot -r "$share" "$share/backup-b"
sync
paths() { "$BIN/oans-cat" "$1" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if "path" in r: print(r["path"])'; }

# Relative globs, two roots, and globs that match nothing.
"$BIN/oans-scan" --exclude photos/cache --exclude 'nothing-*' --exclude no/such/dir --exclude '/srv/none/*' \
  -o "$WORK/rel.idx" "$share" "$MNT/other" 2> "$WORK/rel.err" || fail "scan: $(cat "$WORK/rel.err")"
cat "$WORK/rel.err"
paths "$WORK/rel.idx" > "$WORK/rel.paths"
! grep -q "^$share/photos/cache/\|^$MNT/other/photos/cache/" "$WORK/rel.paths" \
  || fail "photos/cache not excluded below each root: $(grep photos/cache "$WORK/rel.paths")"
grep -qx "$share/deep/photos/cache/f.bin" "$WORK/rel.paths" || fail "photos/cache excluded deeper than the root"
grep -qx "$share/photos/f.bin" "$WORK/rel.paths" || fail "photos/f.bin missing"
for g in 'nothing-*' no/such/dir '/srv/none/*'; do
  grep -qF "warning: --exclude '$g' matched nothing" "$WORK/rel.err" || fail "no warning for --exclude '$g'"
done
grep -qF "'photos/cache' matched nothing" "$WORK/rel.err" && fail "a warning for a glob that matched"
pass "photos/cache excluded below each of two roots only; the three globs that matched nothing named"

# Read-only snapshots: said once for three.
[ "$(grep -c "is a read-only btrfs snapshot" "$WORK/rel.err")" = 1 ] \
  || fail "read-only snapshots said $(grep -c "is a read-only btrfs snapshot" "$WORK/rel.err") times"
grep -q "$share/\(.snapshots/1\|backup-a\|backup-b\) is a read-only btrfs snapshot" "$WORK/rel.err" \
  || fail "the snapshot is not named"
grep -qx "$share/backup-b/keep/f.bin" "$WORK/rel.paths" || fail "the snapshots were not scanned"
pass "three read-only snapshots entered, said once"

# The nas preset: its names are left out, and its globs that match nothing are not named.
"$BIN/oans-scan" --exclude-preset nas -o "$WORK/nas.idx" "$share" 2> "$WORK/nas.err" || fail "scan: $(cat "$WORK/nas.err")"
cat "$WORK/nas.err"
paths "$WORK/nas.idx" > "$WORK/nas.paths"
grep -q "@eaDir\|#recycle\|\.Trash-1000\|\.snapshots" "$WORK/nas.paths" \
  && fail "the nas preset left in: $(grep "@eaDir\|#recycle\|\.Trash-1000\|\.snapshots" "$WORK/nas.paths")"
grep -qx "$share/keep/f.bin" "$WORK/nas.paths" || fail "keep/f.bin missing"
grep -q "matched nothing" "$WORK/nas.err" && fail "a preset's glob named: $(cat "$WORK/nas.err")"
set +e
"$BIN/oans-scan" --exclude-preset synology -o "$WORK/x.idx" "$share" 2> "$WORK/bad.err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "no such preset; the presets are: nas" "$WORK/bad.err" || fail "unknown preset: exit $rc"
pass "--exclude-preset nas leaves out @eaDir, #recycle, .Trash-*, .snapshots; #snapshot unmatched, not named"

# oans run stores the preset and passes it on.
export OANS_STATE_BASE=$WORK/state
"$BIN/oans" run --quiet --exclude-preset nas "$share" || fail "oans run --exclude-preset nas: exit $?"
conf=$(ls "$OANS_STATE_BASE"/*/run.conf)
grep -qx "scan --exclude-preset" "$conf" && grep -qx "scan nas" "$conf" || fail "preset not stored: $(cat "$conf")"
paths "$(ls "$OANS_STATE_BASE"/*/gen-000001.idx)" > "$WORK/run.paths"
grep -q "@eaDir" "$WORK/run.paths" && fail "oans run scanned @eaDir"
grep -qx "$share/keep/f.bin" "$WORK/run.paths" || fail "oans run did not scan keep/f.bin"
pass "oans run --exclude-preset nas stored and used"
