#!/usr/bin/env bash
# Files are known by filesystem UUID, btrfs subvolume and inode, not by st_dev: a btrfs
# subvolume's device number is handed out at mount time and changes with mount order. An
# apply stopped half way, then the filesystem unmounted and mounted again after another
# btrfs (so its subvolume gets another device number), resumes from the journal and
# dedupes what is left, with no file taken for "replaced by another file".
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
A=$MNT
loop_a=${LOOPS[-1]}
btrfs -q subvolume create "$A/sv"
make_tree "$A/sv/orig"
cp -a --reflink=never "$A/sv/orig" "$A/sv/copy"
sync
before=$(checksums "$A")
"$BIN/oans-scan" --quiet "$A" -o "$WORK/idx"
"$BIN/oans-plan" --json --round-size 1M "$WORK/idx" -o "$WORK/plan" > "$WORK/plan.json" 2>&1
rounds=$(python3 -c "import json; print(json.load(open('$WORK/plan.json'))['rounds'])")
[ "$rounds" -ge 10 ] || fail "expected at least 10 rounds, got $rounds"
dev_before=$(stat -c %d "$A/sv/orig")

set +e
"$BIN/oans-apply" --json --deadline 2s --max-rate 4M "$WORK/plan" > "$WORK/run1.json" 2> "$WORK/run1.err"; rc=$?
set -e
[ $rc = 3 ] || fail "expected exit 3 (stopped early), got $rc: $(cat "$WORK/run1.err")"
done1=$(python3 -c "import json; print(json.load(open('$WORK/run1.json'))['rounds_done'])")
[ "$done1" -gt 0 ] && [ "$done1" -lt "$rounds" ] || fail "first run did $done1 of $rounds rounds"

# Unmount; another btrfs takes the lowest free anonymous device numbers first.
umount "$A"
mkfs_mount btrfs 256M other
btrfs -q subvolume create "$MNT/x"
stat "$MNT/x/." > /dev/null
mount "$loop_a" "$A"
MOUNTS+=("$A")
stat "$A/." "$A/sv/." > /dev/null
dev_after=$(stat -c %d "$A/sv/orig")
# Tests running beside this one mount and unmount too and may free the number again:
# take more numbers and remount until the subvolume's has changed.
for i in 1 2 3 4 5; do
  [ "$dev_before" = "$dev_after" ] || break
  umount "$A"
  btrfs -q subvolume create "$MNT/x$i"
  stat "$MNT/x$i/." > /dev/null
  mount "$loop_a" "$A"
  stat "$A/." "$A/sv/." > /dev/null
  dev_after=$(stat -c %d "$A/sv/orig")
done
[ "$dev_before" != "$dev_after" ] || fail "the subvolume kept device number $dev_before: this test shows nothing"

"$BIN/oans-apply" --json "$WORK/plan" > "$WORK/run2.json" 2> "$WORK/run2.err"
cat "$WORK/run2.err"
python3 - "$WORK/run2.json" "$done1" "$rounds" <<'PY' || fail "resume after remount: $(cat "$WORK/run2.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rounds_from_journal"] == int(sys.argv[2]), s
assert s["rounds_done"] + s["rounds_from_journal"] == int(sys.argv[3]), s
assert s["files_changed"] == 0 and s["bytes_skipped"] == 0 and s["errors"] == 0, s
assert s["bytes_deduped"] > 0, s
PY
[ "$before" = "$(checksums "$A")" ] || fail "contents changed"
[ -z "$(unshared_files "$A/sv/copy" 4096)" ] || fail "tree not fully deduped after the resume"
pass "resumed after a remount (st_dev $dev_before -> $dev_after): the rest deduped, contents unchanged"
