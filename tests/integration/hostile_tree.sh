#!/usr/bin/env bash
# Hostile trees: every case leaves every file's content unchanged (checksums before and
# after), touches nothing outside the roots, and reports what it could not do.
# Cases: permission denied (scan as an unprivileged user), immutable and append-only
# files, a running executable, nodatacow next to normal files, an active swapfile, a
# zstd-compressed mount, subvolumes and a read-only snapshot, names with newlines and
# invalid UTF-8, paths longer than PATH_MAX, a sparse file over 4 GiB, empty files,
# symlink loops, a directory replaced by a symlink between plan and apply, SIGINT and
# SIGKILL during apply, and a full disk while writing an index.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v btrfs >/dev/null || { echo "SKIP: btrfs-progs not installed"; exit 77; }
mkfs_mount btrfs-zstd 1G
T=$MNT
btrfs -q subvolume create "$T/vol1" >/dev/null
btrfs -q subvolume create "$T/vol2" >/dev/null
python3 - "$T" <<'PY'
import os, random, sys
t = sys.argv[1]
r = random.Random(3)
blob = r.randbytes(3 << 20)
def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # (bytes paths too: names need not be UTF-8)
    with open(path, "wb") as f:
        f.write(data)
for v in ("vol1", "vol2"):
    put(f"{t}/{v}/plain.bin", blob)
    put(f"{t}/{v}/immutable.bin", blob)
    put(f"{t}/{v}/appendonly.bin", blob)
    put(f"{t}/{v}/name\nwith newline.bin", blob[:1 << 20])
    put(os.fsencode(f"{t}/{v}/") + b"bad-utf8-\xff\xfe.bin", blob[:1 << 20])
    put(f"{t}/{v}/empty", b"")
    put(f"{t}/{v}/denied/secret.bin", blob[:2 << 20])
    # A path longer than PATH_MAX (4096), built with relative opens.
    fd = os.open(f"{t}/{v}", os.O_RDONLY)
    for i in range(40):
        name = f"d{i:02d}" + "x" * 120
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    with os.fdopen(os.open("deep.bin", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
        f.write(blob[:1 << 20])
    os.close(fd)
    # A sparse file over 4 GiB with data at its end.
    with open(f"{t}/{v}/sparse5g.img", "wb") as f:
        f.truncate(5 << 30)
        f.seek((5 << 30) - (1 << 20))
        f.write(blob[:1 << 20])
    os.symlink("loop-b", f"{t}/{v}/loop-a")
    os.symlink("loop-a", f"{t}/{v}/loop-b")
    put(f"{t}/{v}/victim/file.bin", blob[:1 << 20])
PY
# nodatacow files must be made empty, then filled.
for v in vol1 vol2; do
  touch "$T/$v/nocow.bin"; chattr +C "$T/$v/nocow.bin"; head -c 1M "$T/vol1/plain.bin" > "$T/$v/nocow.bin"
done
head -c 1M "$T/vol1/plain.bin" > "$T/vol2/cow-twin-of-nocow.bin"
cp /bin/sleep "$T/vol1/running-exe"; cp /bin/sleep "$T/vol2/running-exe"
"$T/vol1/running-exe" 300 & exe_pid=$!
# An active swapfile (nodatacow, no compression), and its twin.
swap=""
if truncate -s 0 "$T/vol1/swapfile" && chattr +C "$T/vol1/swapfile" && head -c 32M /dev/zero > "$T/vol1/swapfile" \
   && chmod 600 "$T/vol1/swapfile" && mkswap -q "$T/vol1/swapfile" >/dev/null && swapon "$T/vol1/swapfile" 2>/dev/null; then
  swap="$T/vol1/swapfile"
  truncate -s 0 "$T/vol2/swapfile-twin"; chattr +C "$T/vol2/swapfile-twin"; cat "$swap" > "$T/vol2/swapfile-twin"
fi
cleanup_extra() { kill "$exe_pid" 2>/dev/null; [ -n "$swap" ] && swapoff "$swap" 2>/dev/null; chattr -i -a "$T"/vol*/immutable.bin "$T"/vol*/appendonly.bin 2>/dev/null; true; }
trap 'cleanup_extra; it_cleanup' EXIT
chattr +i "$T/vol2/immutable.bin"
chattr +a "$T/vol2/appendonly.bin"
chmod 000 "$T/vol1/denied" "$T/vol2/denied"
btrfs -q subvolume snapshot -r "$T/vol2" "$T/snap-ro" >/dev/null
sync
before=$(checksums "$T")

# Permission denied: an unprivileged scan records the unreadable directory and goes on.
chmod 755 "$WORK" "$T"
set +e
setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/oans-scan" --json "$T/vol1" -o /dev/null > "$WORK/nobody.err" 2>&1
rc=$?
set -e
[ $rc = 1 ] || fail "unprivileged scan: exit $rc, $(cat "$WORK/nobody.err")"
grep -q "denied" "$WORK/nobody.err" || fail "permission denied not reported: $(cat "$WORK/nobody.err")"
pass "permission denied is recorded and the walk goes on (exit $rc)"

"$BIN/oans-scan" --json "$T" -o "$WORK/idx" > "$WORK/scan.err" 2>&1
grep -q "loop-a" "$WORK/idx" 2>/dev/null && fail "symlink loop followed"
"$BIN/oans-cat" "$WORK/idx" > "$WORK/idx.json"
python3 - "$WORK/idx.json" <<'PY' || fail "index content"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
files = [r for r in recs if r["type"] == "file"]
paths = [r.get("path", "") for r in files]
assert any("name\nwith newline" in p for p in paths), "newline name missing"
assert any("path_hex" in r for r in files), "invalid UTF-8 name not kept exactly"
assert any(p.endswith("deep.bin") and len(p) > 4096 for p in paths), "long path missing"
assert not any(p.endswith("/empty") for p in paths), "empty file recorded"
assert not any("loop-" in p for p in paths), "symlink recorded"
PY
pass "index keeps odd names exactly, long paths, and skips empty files and symlink loops"

"$BIN/oans-plan" --stats "$WORK/idx" -o "$WORK/plan"
# Between plan and apply, a directory is replaced by a symlink to somewhere else.
mkdir -p "$WORK/outside"; cp "$T/vol2/victim/file.bin" "$WORK/outside/file.bin"
outside_before=$(checksums "$WORK/outside")
mv "$T/vol2/victim" "$T/vol2/victim.moved"; ln -s "$WORK/outside" "$T/vol2/victim"
before=$(checksums "$T")

set +e
"$BIN/oans-apply" --json --no-journal "$WORK/plan" > "$WORK/apply.json" 2> "$WORK/apply.err"
rc=$?
set -e
cat "$WORK/apply.err"
[ $rc = 1 ] || fail "expected exit 1 (partial), got $rc"
[ "$before" = "$(checksums "$T")" ] || fail "contents changed"
[ "$outside_before" = "$(checksums "$WORK/outside")" ] || fail "a file outside the roots changed"
grep -q "victim/file.bin: skipped, ELOOP" "$WORK/apply.err" || fail "symlinked directory not refused"
grep -q "EPERM" "$WORK/apply.err" || fail "immutable/append-only not reported"
[ -z "$swap" ] || grep -q "ETXTBSY" "$WORK/apply.err" || fail "swapfile not reported"
grep -q "EINVAL" "$WORK/apply.err" && fail "a nodatacow file was paired with an ordinary one"
pass "immutable, append-only, swapfile and a symlinked directory: reported, untouched (exit 1); nodatacow never paired with ordinary files"
[ -z "$(unshared_files "$T/vol2/running-exe" 1)" ] || fail "running executable not deduped"
[ -z "$(unshared_files "$T/vol2/plain.bin" 1)" ] || fail "cross-subvolume duplicate not deduped"
[ -z "$(unshared_files "$T/snap-ro/plain.bin" 1)" ] || fail "read-only snapshot not deduped"
[ -z "$(unshared_files "$T/vol2/sparse5g.img" 1)" ] || fail "sparse 5 GiB file not deduped"
pass "running executable, another subvolume, a read-only snapshot and a 5 GiB sparse file are deduped on a zstd mount"

# SIGINT stops after the current round with a summary; SIGKILL mid-run, then a re-run
# completes; nothing is corrupted either way.
rm -rf "$T/vol2/victim"; mv "$T/vol2/victim.moved" "$T/vol2/victim"
btrfs -q subvolume create "$T/vol3" >/dev/null
for i in $(seq 1 30); do head -c 4M "$T/vol1/sparse5g.img" > /dev/null; cp --reflink=never "$T/vol1/plain.bin" "$T/vol3/copy$i.bin"; done
sync
before=$(checksums "$T")
"$BIN/oans-scan" --quiet "$T/vol1" "$T/vol3" -o "$WORK/idx2"
"$BIN/oans-plan" --quiet --round-size 4M "$WORK/idx2" -o "$WORK/plan2"
set +e
"$BIN/oans-apply" --max-rate 8M "$WORK/plan2" 2> "$WORK/int.err" & pid=$!
sleep 2; kill -INT $pid; wait $pid; rc=$?
set -e
cat "$WORK/int.err"
[ $rc = 3 ] || fail "SIGINT: expected exit 3, got $rc"
grep -q "run again with the same plan" "$WORK/int.err" || fail "no summary after SIGINT"
pass "SIGINT stops after the current round with a summary (exit 3)"
"$BIN/oans-apply" --max-rate 8M "$WORK/plan2" 2>/dev/null & pid=$!
sleep 2; kill -KILL $pid; wait $pid || true
set +e
"$BIN/oans-apply" "$WORK/plan2" 2> "$WORK/resume.err"; rc=$?
set -e
cat "$WORK/resume.err"
# vol1 holds files apply must refuse (swapfile, immutable), so 1 is the expected result.
[ $rc = 0 ] || [ $rc = 1 ] || fail "re-run after SIGKILL: exit $rc"
grep -q "resuming" "$WORK/resume.err" || fail "re-run did not resume from the journal"
[ "$before" = "$(checksums "$T")" ] || fail "contents changed"
[ -z "$(unshared_files "$T/vol3" 4096)" ] || fail "not fully deduped after SIGKILL and re-run"
pass "SIGKILL mid-run, then a re-run completes; nothing corrupted"

# A full disk while writing an index: non-zero exit, a message, no file that looks complete.
mkdir -p "$WORK/full"; mount -t tmpfs -o size=4k tmpfs "$WORK/full"; MOUNTS+=("$WORK/full")
set +e
"$BIN/oans-scan" --quiet "$T" -o "$WORK/full/idx" 2> "$WORK/full.err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "No space left on device" "$WORK/full.err" || fail "full disk: rc $rc, $(cat "$WORK/full.err")"
[ -z "$(ls -A "$WORK/full")" ] || fail "a partial index was left: $(ls -A "$WORK/full")"
pass "a full disk gives exit 2 with a message and leaves no file"
