#!/usr/bin/env bash
# The plan predicts what the filesystem gives back, and apply measures it, with twelve
# read-only snapshots of a subvolume holding two copies of a mixed tree (thousands of
# 3-12 KiB files and two 48 MiB files), as snapper makes them. Deduping a file inside a
# snapshot rewrites tree leaves it shared: for the small files that costs more metadata
# than it frees, for the large ones far less. Checked: the default plan's predicted net
# within 25% of what df measures, apply's within 10%, the default's net not negative
# and at least 90% of --snapshots=all's, and the headline (the data the plan says it
# frees) never above 1.25 times the data actually freed.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 1200M
btrfs -q subvolume create "$MNT/vol"
snapshot_tree "$MNT/vol/a" 2000 2
cp -a --reflink=never "$MNT/vol/a" "$MNT/vol/b"
mkdir "$MNT/snaps"
for i in $(seq 1 12); do btrfs -q subvolume snapshot -r "$MNT/vol" "$MNT/snaps/s$i"; done
before=$(checksums "$MNT/vol")
"$BIN/oans-scan" --quiet -o "$WORK/idx" "$MNT"
"$BIN/oans-plan" --json --snapshots=all -o "$WORK/all.plan" "$WORK/idx" > "$WORK/all.json" 2>&1
"$BIN/oans-plan" --json -o "$WORK/auto.plan" "$WORK/idx" > "$WORK/auto.json" 2>&1
"$BIN/oans-plan" --stats -o /dev/null "$WORK/idx" 2> "$WORK/auto.txt"
cat "$WORK/all.json" "$WORK/auto.json" "$WORK/auto.txt"
all_net=$(json_field "$WORK/all.json" net_bytes)
net=$(json_field "$WORK/auto.json" net_bytes)
frees=$(json_field "$WORK/auto.json" frees_bytes)
[ "$(json_field "$WORK/auto.json" refs_known)" = True ] || fail "the scan's census of references was not used"
grep -A1 "^oans-plan: found [0-9]* files" "$WORK/auto.txt" | tail -1 | grep -q "^  net .* to free" ||
  fail "the summary does not lead with the net"
[ "$net" -ge 0 ] || fail "the default plan's net $net is negative"
python3 -c "import sys; sys.exit(0 if $net >= 0.9 * $all_net else 1)" || fail "default net $net < 90% of all's $all_net"
u0=$(df_used "$MNT")
d0=$(data_used "$MNT")
"$BIN/oans-apply" --json "$WORK/auto.plan" > "$WORK/apply.json"
u1=$(df_used "$MNT")
d1=$(data_used "$MNT")
cat "$WORK/apply.json"
[ "$(checksums "$MNT/vol")" = "$before" ] || fail "content changed"
df_net=$((u0 - u1))
applied=$(json_field "$WORK/apply.json" net_freed_bytes)
echo "predicted net $net (all: $all_net), apply's $applied, df's $df_net; frees $frees, data freed $((d0 - d1))"
[ "$df_net" -gt $((40 << 20)) ] || fail "df's net $df_net: the large copies were not freed"
within "$net" "$df_net" 25 || fail "predicted net $net not within 25% of df's $df_net"
within "$applied" "$df_net" 10 || fail "apply's net $applied not within 10% of df's $df_net"
python3 -c "import sys; sys.exit(0 if $frees <= 1.25 * $((d0 - d1)) else 1)" || fail "frees $frees > 1.25 x data freed $((d0 - d1))"
pass "12 snapshots: predicted net $net, apply's $applied, df's $df_net; all's predicted $all_net"
