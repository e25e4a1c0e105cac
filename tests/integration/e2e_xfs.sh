#!/usr/bin/env bash
# scan | plan, then apply, on XFS with reflink: every copied file ends fully shared
# (FIEMAP SHARED flags), contents unchanged, and the filesystem's used space drops.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v mkfs.xfs >/dev/null || { echo "SKIP: xfsprogs not installed"; exit 77; }
mkfs_mount xfs 512M
tree_and_copy
before=$(checksums "$MNT")
used_before=$(df --output=used -B1 "$MNT" | tail -1)

"$BIN/oans-scan" --quiet "$MNT" | "$BIN/oans-plan" --stats > "$WORK/plan.capnp"
"$BIN/oans-apply" "$WORK/plan.capnp"
sync

[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "every file's content is unchanged"
left=$(unshared_files "$MNT/copy" 4096)
[ -z "$left" ] || fail "files not fully shared after apply: $left"
pass "every copied file of 4 KiB or more is fully shared"
used_after=$(df --output=used -B1 "$MNT" | tail -1)
echo "used: $used_before -> $used_after"
[ $((used_before - used_after)) -gt $((10 << 20)) ] || fail "less than 10 MiB reclaimed"
pass "XFS used space dropped by $(( (used_before - used_after) >> 20 )) MiB"

"$BIN/oans-scan" --quiet "$MNT" | "$BIN/oans-plan" --json 2> "$WORK/stats.json" > /dev/null
python3 -c "import json,sys; s=json.load(open('$WORK/stats.json')); sys.exit(0 if s['planned_bytes']==0 else 1)" \
  || fail "second plan not empty: $(cat "$WORK/stats.json")"
pass "re-plan after apply is empty"
