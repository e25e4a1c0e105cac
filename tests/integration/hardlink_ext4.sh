#!/usr/bin/env bash
# Hardlink mode on ext4 (no reflink): whole-file duplicates become hardlinks to their
# source after a byte-for-byte compare; a file changed during the compare is left as the
# writer left it; reflink mode on ext4 is refused before any work, in one line naming
# --link=hard, and changes nothing.
source "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "strace missing (scripts/install-deps)"; exit 77; }
it_init "$1"
mkfs_mount ext4 512M
make_tree "$MNT/orig"
cp -a "$MNT/orig" "$MNT/copy"
python3 - "$MNT" <<'PY'
import random, sys
m = sys.argv[1]
import os
data = random.Random(77).randbytes(24 << 20)
for d in ("a", "b"):
    os.makedirs(f"{m}/slow/{d}")
    open(f"{m}/slow/{d}/slow.bin", "wb").write(data)
PY
touch -r "$MNT/slow/a/slow.bin" "$MNT/slow/b/slow.bin"  # hardlink mode links equal mtimes only
sync
before=$(checksums "$MNT")
"$BIN/oans-scan" --quiet --exclude slow "$MNT" -o "$WORK/idx"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx" -o "$WORK/plan"

# Reflink mode cannot work on ext4: refused before any file is opened, in one line.
set +e
"$BIN/oans-apply" --no-journal "$WORK/plan" 2> "$WORK/reflink.err"; rc=$?
set -e
cat "$WORK/reflink.err"
[ $rc = 2 ] && [ "$(wc -l < "$WORK/reflink.err")" = 1 ] && grep -q "is on ext4, .*give --link=hard" "$WORK/reflink.err" \
  || fail "reflink mode on ext4: rc $rc, $(tail -3 "$WORK/reflink.err")"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "reflink mode on ext4 is refused up front in one line naming --link=hard, nothing changed"

# Hardlink mode, with a writer changing a file while it is being compared (the rate
# limit makes the 48 MiB compare take about 6 s; the writer strikes 3 s after apply has
# opened the files, not 3 s after apply's start, which a loaded machine can make all
# start-up).
"$BIN/oans-scan" --quiet "$MNT/slow" -o "$WORK/slow.idx"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/slow.idx" -o "$WORK/slow.plan"
(
  for _ in $(seq 600); do
    pid=$(pgrep -f -- "--journal $WORK/slow.journal" | head -n 1)
    [ -n "$pid" ] && [ -n "$(find /proc/"$pid"/fd -lname "$MNT/slow/*" 2>/dev/null)" ] && break
    sleep 0.1
  done
  sleep 3
  printf 'written during the compare' | dd of="$MNT/slow/b/slow.bin" bs=1 seek=$((1 << 20)) conv=notrunc status=none
) &
writer=$!
set +e
"$BIN/oans-apply" --link=hard --prefetch off --max-rate 8M --journal "$WORK/slow.journal" "$WORK/slow.plan" 2> "$WORK/slow.err"; rc=$?
set -e
wait $writer
cat "$WORK/slow.err"
[ $rc = 1 ] || fail "expected exit 1 (the file changed), got $rc"
grep -Eq "slow.bin: not linked, (changed while being compared|opened for writing by another process during the compare)" "$WORK/slow.err" || fail "change during compare not reported"
python3 - "$MNT" <<'PY' || fail "a file changed during the compare lost the writer's data"
import random, sys
m = sys.argv[1]
data = bytearray(random.Random(77).randbytes(24 << 20))
orig = bytes(data)
data[1 << 20:(1 << 20) + 26] = b"written during the compare"
a, b = open(f"{m}/slow/a/slow.bin", "rb").read(), open(f"{m}/slow/b/slow.bin", "rb").read()
assert (a, b) in ((orig, bytes(data)), (bytes(data), orig)), "contents wrong"
PY
[ "$(stat -c %i "$MNT/slow/a/slow.bin")" != "$(stat -c %i "$MNT/slow/b/slow.bin")" ] || fail "changed file was linked"
pass "a file changed during the compare keeps the writer's data and is not linked"

# src/file1.bin and src/file1.hardlink are one file in orig and another in copy: a file
# with other names is never linked (one name alone would split it), so exit 1.
# Counted with strace: the journal records each round's hidden names in one durable
# write before its links and one after, not two per link.
set +e
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -c -e trace=fdatasync -o "$WORK/hard.strace" \
  "$BIN/oans-apply" --link=hard --json --journal "$WORK/hard.journal" "$WORK/plan" > "$WORK/hard.json" 2> "$WORK/hard.err"; rc=$?
set -e
[ $rc = 1 ] || fail "expected exit 1 (a file with other names left alone), got $rc: $(cat "$WORK/hard.err")"
grep -q "src/file1.*not linked, has other hardlinks" "$WORK/hard.err" || fail "$(cat "$WORK/hard.err")"
[ "$(grep -c "not linked" "$WORK/hard.err")" = 1 ] || fail "other files not linked: $(cat "$WORK/hard.err")"
syncs=$(awk '$NF == "fdatasync" {print $4}' "$WORK/hard.strace")
python3 - "$WORK/hard.json" "${syncs:-0}" <<'PY' || fail "journal syncs: ${syncs:-none}; $(cat "$WORK/hard.strace")"
import json, sys
s, syncs = json.load(open(sys.argv[1])), int(sys.argv[2])
assert s["files_linked"] >= 20, s
assert 0 < syncs <= 1 + 3 * s["rounds"] < s["files_linked"], (syncs, s["rounds"], s["files_linked"])
PY
pass "the journal made ${syncs} durable writes for $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["files_linked"])' "$WORK/hard.json") links"
# Each round is read ahead in disk order before the compare, as in reflink mode.
python3 - "$WORK/hard.json" <<'PY' || fail "hardlink mode did not read its rounds ahead: $(cat "$WORK/hard.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["bytes_prefetched"] >= 2 * s["bytes_planned"] > 0, s   # sources and destinations
# What is said to be freed is what the replaced copies held on disk (the sparse file's data).
assert 0 < s["bytes_linked"] <= s["bytes_planned"] + 8192 * s["files_linked"], s  # blocks, not the sparse size
PY

ino_a=$(stat -c %i "$MNT/orig/media/big1.bin")
ino_b=$(stat -c %i "$MNT/copy/media/big1.bin")
[ "$ino_a" = "$ino_b" ] || fail "copy/media/big1.bin is not a link to the original"
[ "$(stat -c %h "$MNT/orig/media/big1.bin")" = 2 ] || fail "link count of big1.bin"
[ -z "$(find "$MNT/copy/src" "$MNT/orig/src" -maxdepth 1 -name '*oans-link*')" ] || fail "a temporary link was left behind"
after=$(checksums "$MNT" | grep -v "slow/")
[ "$(echo "$before" | grep -v "slow/")" = "$after" ] || fail "contents changed"
pass "whole-file duplicates are hardlinks to their source, contents unchanged"
