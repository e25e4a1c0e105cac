#!/usr/bin/env bash
# Files changed between plan and apply are left exactly as the user wrote them and
# reported; everything else is deduped. Covers modified in place (same size), appended,
# truncated, deleted, renamed, replaced by another file under the same name, and a
# concurrent writer during apply.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
tree_and_copy
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx"
"$BIN/oans-plan" --quiet "$WORK/idx" -o "$WORK/plan"

# Change some destinations and sources after planning.
python3 - "$MNT/copy" <<'PY'
import os, sys
c = sys.argv[1]
with open(f"{c}/src/file10.bin", "r+b") as f:      # same size, new bytes
    f.seek(100); f.write(b"CHANGED BY THE USER")
with open(f"{c}/src/file11.bin", "ab") as f:       # appended
    f.write(b"appended")
os.truncate(f"{c}/src/file12.bin", 1000)           # truncated
os.unlink(f"{c}/src/file13.bin")                    # deleted
os.rename(f"{c}/src/file14.bin", f"{c}/src/file14.moved")   # renamed away
os.rename(f"{c}/src/file15.bin", f"{c}/src/file14.bin")     # another file under that name
with open(f"{c}/src/file16.bin.new", "wb") as f:     # replaced by a same-size file
    f.write(os.urandom(os.path.getsize(f"{c}/src/file16.bin")))
os.rename(f"{c}/src/file16.bin.new", f"{c}/src/file16.bin")
PY
# A source changed too: its destinations must be left alone.
printf 'X' | dd of="$MNT/orig/media/big2.bin" bs=1 seek=5000 conv=notrunc status=none
sync
before=$(checksums "$MNT")

set +e
"$BIN/oans-apply" "$WORK/plan" 2> "$WORK/apply.err"
rc=$?
set -e
cat "$WORK/apply.err"
[ $rc -eq 1 ] || fail "expected exit code 1 (partial), got $rc"
pass "apply reports a partial run (exit 1)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "every file's content is what the user left"
for f in file10.bin file11.bin file12.bin file13.bin file14.bin file16.bin; do
  grep -q "copy/src/$f: skipped" "$WORK/apply.err" || fail "no report for $f"
done
grep -q "orig/media/big2.bin: skipped" "$WORK/apply.err" || fail "no report for the changed source"
pass "each changed file is named in the report"
# The untouched copies were deduped.
left=$(unshared_files "$MNT/copy/src/sub" 4096)
[ -z "$left" ] || fail "untouched files not shared: $left"
pass "untouched files were deduped"

# A concurrent writer while apply runs: a process rewrites random ranges of a destination
# (and of a source) the whole time; afterwards each file holds exactly what its writer
# wrote, whatever apply shared in between.
rm -rf "$MNT/copy"
cp -a --reflink=never "$MNT/orig" "$MNT/copy"
sync
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx2"
"$BIN/oans-plan" --quiet --round-size 2M "$WORK/idx2" -o "$WORK/plan2"
python3 - "$MNT/copy/media/big1.bin" "$MNT/orig/src/sub/part9.dat" "$WORK/writer.done" <<'PY' &
import os, random, sys, time
paths, done = sys.argv[1:3], sys.argv[3]
r = random.Random(21)
model = {p: bytearray(open(p, "rb").read()) for p in paths}
fds = {p: os.open(p, os.O_WRONLY) for p in paths}
end = time.time() + 6
writes = 0
while time.time() < end:
    p = r.choice(paths)
    off = r.randrange(0, len(model[p]) - 4096)
    data = r.randbytes(r.choice((1, 100, 4096)))
    os.pwrite(fds[p], data, off)
    model[p][off:off + len(data)] = data
    writes += 1
    time.sleep(0.001)
for p in paths:
    os.close(fds[p])
    assert open(p, "rb").read() == bytes(model[p]), f"{p} differs from what its writer wrote"
open(done, "w").write(str(writes))
PY
writer=$!
set +e
"$BIN/oans-apply" --no-journal --max-rate 8M "$WORK/plan2" 2> "$WORK/apply2.err"; rc=$?
set -e
wait $writer || fail "a file written during apply lost its writer's data"
[ $rc = 0 ] || [ $rc = 1 ] || fail "apply with a concurrent writer: exit $rc"
pass "$(cat "$WORK/writer.done") writes during apply: both files hold exactly what the writer wrote (apply exit $rc)"
