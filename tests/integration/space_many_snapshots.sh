#!/usr/bin/env bash
# Fifty read-only snapshots of a subvolume holding two copies of small files only: each
# leaf rewritten in fifty-one trees costs more metadata than its files free, so
# --snapshots=all loses space (predicted, and measured on a twin filesystem). The
# default plans nothing there and says so, and its apply loses nothing.
source "$(dirname "$0")/lib.sh"
it_init "$1"
make_fs() {  # make_fs NAME: the same tree and snapshots on image NAME
  mkfs_mount btrfs 768M "$1"
  btrfs -q subvolume create "$MNT/vol"
  snapshot_tree "$MNT/vol/a" 1000 0
  cp -a --reflink=never "$MNT/vol/a" "$MNT/vol/b"
  mkdir "$MNT/snaps"
  for i in $(seq 1 50); do btrfs -q subvolume snapshot -r "$MNT/vol" "$MNT/snaps/s$i"; done
  "$BIN/oans-scan" --quiet -o "$WORK/$1.idx" "$MNT"
}
make_fs all
# Small rounds: an operation of 51 destinations opens as many files.
"$BIN/oans-plan" --json --snapshots=all --round-size 8M -o "$WORK/all.plan" "$WORK/all.idx" > "$WORK/all.json" 2>&1
all_net=$(json_field "$WORK/all.json" net_bytes)
u0=$(df_used "$MNT")
"$BIN/oans-apply" --quiet "$WORK/all.plan"
all_df=$(( u0 - $(df_used "$MNT") ))
echo "--snapshots=all: predicted net $all_net, df's $all_df"
[ "$all_df" -lt 0 ] || fail "--snapshots=all did not lose space here (df's net $all_df): the test proves nothing"
[ "$all_net" -lt 0 ] || fail "--snapshots=all predicted a net of $all_net, not a loss"

make_fs auto
"$BIN/oans-plan" --json -o "$WORK/auto.plan" "$WORK/auto.idx" > "$WORK/auto.json" 2>&1
"$BIN/oans-plan" -o /dev/null "$WORK/auto.idx" 2> "$WORK/auto.txt"
cat "$WORK/auto.json" "$WORK/auto.txt"
net=$(json_field "$WORK/auto.json" net_bytes)
[ "$net" -ge 0 ] || fail "the default's predicted net $net is negative"
if [ "$(json_field "$WORK/auto.json" rounds)" = 0 ]; then
  grep -q "left alone in snapshots" "$WORK/auto.txt" || fail "planned nothing without saying why"
  what="plans nothing, and says so"
else
  what="plans a net of $net"
fi
u0=$(df_used "$MNT")
"$BIN/oans-apply" --quiet "$WORK/auto.plan"
auto_df=$(( u0 - $(df_used "$MNT") ))
echo "default: predicted net $net, df's $auto_df"
[ "$auto_df" -ge $((-1 << 20)) ] || fail "the default lost $((-auto_df)) bytes"
pass "50 snapshots of small files: all loses $((-all_df)) bytes; the default $what (df: $auto_df)"
