#!/usr/bin/env bash
# oans-apply measures what it gave back: the filesystem committed and measured before
# and after (btrfs: data and metadata used, with their copies; XFS: statfs). Its net
# equals what df shows, on btrfs with read-only snapshots (where deduping un-shares
# their tree leaves, so metadata grows) and on XFS; oans run keeps the figures in the
# generation's record and oans status shows them.
source "$(dirname "$0")/lib.sh"
it_init "$1"

# btrfs: a subvolume holding two copies of a tree, three read-only snapshots of it,
# every copy deduped (--snapshots=all).
mkfs_mount btrfs 768M
btrfs -q subvolume create "$MNT/vol"
snapshot_tree "$MNT/vol/a" 600 1
cp -a --reflink=never "$MNT/vol/a" "$MNT/vol/b"
mkdir "$MNT/snaps"
for i in 1 2 3; do btrfs -q subvolume snapshot -r "$MNT/vol" "$MNT/snaps/s$i"; done
before=$(checksums "$MNT")
"$BIN/oans-scan" --quiet -o "$WORK/b.idx" "$MNT"
"$BIN/oans-plan" --quiet --snapshots=all -o "$WORK/b.plan" "$WORK/b.idx"
u0=$(df_used "$MNT")
"$BIN/oans-apply" --json "$WORK/b.plan" > "$WORK/b.json"
u1=$(df_used "$MNT")
cat "$WORK/b.json"
[ "$(checksums "$MNT")" = "$before" ] || fail "content changed"
df_net=$((u0 - u1))
read -r net data meta approx < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print(j["net_freed_bytes"], j["data_freed_bytes"], j["metadata_grown_bytes"], j["space_approximate"])' "$WORK/b.json")
echo "apply: net $net (data $data, metadata $meta); df: $df_net"
[ "$data" -gt $((40 << 20)) ] || fail "data freed $data: the second copy was not freed"
[ "$meta" -gt 0 ] || fail "metadata grown $meta: un-sharing the snapshots' leaves costs metadata"
[ "$net" = $((data - meta)) ] || fail "net $net is not data $data less metadata $meta"
within "$net" "$df_net" 10 || fail "apply's net $net is not within 10% of df's $df_net"
[ "$approx" = False ] || fail "flagged approximate with no other writer"
"$BIN/oans-apply" "$WORK/b.plan" --no-journal 2> "$WORK/b.txt" || true
grep -q "net freed .*, data .* freed, metadata .* grown" "$WORK/b.txt" || fail "no net in the summary: $(cat "$WORK/b.txt")"
pass "btrfs with snapshots: apply's net $net within 10% of df's $df_net"

# Mixed block groups (mkfs.btrfs --mixed, usual below 1 GiB) hold data and metadata
# together: what goes free counts once, not as data freed and metadata shrunk as well.
mkfs_mount btrfs-mixed 700M mixed
rand_file "$MNT/one" $((30 << 20)) 9
cp --reflink=never "$MNT/one" "$MNT/two"
sync
"$BIN/oans-scan" --quiet -o "$WORK/m.idx" "$MNT"
"$BIN/oans-plan" --quiet -o "$WORK/m.plan" "$WORK/m.idx"
u0=$(df_used "$MNT")
"$BIN/oans-apply" --json "$WORK/m.plan" > "$WORK/m.json"
mixed_df=$((u0 - $(df_used "$MNT")))
mixed_net=$(json_field "$WORK/m.json" net_freed_bytes)
echo "mixed block groups: apply's net $mixed_net, df's $mixed_df"
[ "$mixed_df" -gt $((25 << 20)) ] || fail "mixed: df's net $mixed_df: the copy was not freed"
within "$mixed_net" "$mixed_df" 10 || fail "mixed block groups: apply's net $mixed_net is not within 10% of df's $mixed_df"
pass "btrfs with mixed block groups: apply's net $mixed_net within 10% of df's $mixed_df"

# XFS: no census; the plan counts the pieces it covers that FIEMAP does not call shared;
# apply measures with statfs, data and metadata together.
mkfs_mount xfs 512M
tree_and_copy
"$BIN/oans-scan" --quiet -o "$WORK/x.idx" "$MNT"
"$BIN/oans-plan" --json -o "$WORK/x.plan" "$WORK/x.idx" > "$WORK/x-plan.json" 2>&1
predicted=$(json_field "$WORK/x-plan.json" net_bytes)
u0=$(df_used "$MNT")
"$BIN/oans-apply" --json "$WORK/x.plan" > "$WORK/x.json"
u1=$(df_used "$MNT")
read -r net meta < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print(j["net_freed_bytes"], j["metadata_grown_bytes"])' "$WORK/x.json")
echo "xfs: predicted net $predicted, apply's $net, df's $((u0 - u1))"
within "$predicted" $((u0 - u1)) 10 || fail "XFS: predicted net $predicted, df $((u0 - u1))"
[ "$meta" = None ] || fail "XFS: metadata told apart by statfs: $meta"
[ "$net" -gt $((10 << 20)) ] && within "$net" $((u0 - u1)) 10 || fail "XFS: net $net, df $((u0 - u1))"
pass "XFS: predicted net $predicted and apply's $net within 10% of df's $((u0 - u1))"

# oans run keeps the figures per generation; oans status shows them; --snapshots is
# stored for oans-plan.
mkfs_mount btrfs 512M run
tree_and_copy
export OANS_STATE_BASE=$WORK/state
"$BIN/oans" run --quiet --snapshots all "$MNT" || fail "oans run: exit $?"
"$BIN/oans" run --show-config | grep -q "oans-plan .*--snapshots all" || fail "--snapshots not stored"
python3 - "$OANS_STATE_BASE" <<'PY' || fail "run record: $(cat "$OANS_STATE_BASE"/*/run-*.json)"
import glob, json, sys
r = json.load(open(sorted(glob.glob(sys.argv[1] + "/*/run-*.json"))[0]))
assert r["net_freed_bytes"] > 10 << 20 and r["data_freed_bytes"] > 10 << 20, r
apply = [s for s in r["steps"] if s["tool"] == "apply"][0]
assert apply["summary"]["net_freed_bytes"] == r["net_freed_bytes"], apply
PY
"$BIN/oans" status > "$WORK/status.txt"
cat "$WORK/status.txt"
grep -q "net freed [0-9.]* [KMG]iB" "$WORK/status.txt" || fail "oans status shows no net freed"
pass "oans run records the space freed per generation; oans status shows it"
