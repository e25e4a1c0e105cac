#!/usr/bin/env bash
# A scan that follows btrfs changes (oans-scan --previous on btrfs, as root) writes the
# same index as a cold walk of the same tree, record for record (paths, hardlinks,
# identity, extents, hashes, directories), after random batches of every kind of change:
# new, deleted, modified, appended, truncated files, renames and moves of files and of
# directories, removed directory trees, new and removed hardlinks, a rewrite with the old
# mtime restored, chattr, data deduped or defragmented by other tools, reflinked copies,
# plain and shifted copies, files and directories read (relatime writes their atimes),
# and every third batch the previous index's plan applied by oans. Each time, plan --since the previous index from the changes
# the new one lists is the plan of a join of the two (--since-join).
# OANS_FOLLOW_SEEDS (default 12) sets how many batches run, each from the last index.
# Then: nothing changed costs no directory read, stat or open; a new subvolume below the
# root is seen by a walk, said once; then snapshots of it taken and deleted between
# random changes are followed; content is unchanged throughout.
source "$(dirname "$0")/lib.sh"
it_init "$1"
PY="$(dirname "$0")/follow_changes.py"
mkfs_mount btrfs 512M
T=$MNT/tree
mkdir "$T"
python3 "$PY" make "$T" 1
sync
"$BIN/oans-scan" --quiet "$T" -o "$WORK/g0.idx"
prev=$WORK/g0.idx
json_field() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$1" "$2"; }

seeds=${OANS_FOLLOW_SEEDS:-12}
for seed in $(seq 1 "$seeds"); do
  applied=
  if [ $((seed % 3)) = 0 ]; then  # oans dedupes what the previous index found
    "$BIN/oans-plan" --quiet "$prev" -o "$WORK/a$seed.plan" && "$BIN/oans-apply" --quiet "$WORK/a$seed.plan" ||
      fail "seed $seed: the plan of the previous index could not be applied"
    applied="apply "
  fi
  made=$applied$(python3 "$PY" change "$T" "$seed" 6)
  sync
  "$BIN/oans-scan" --json --previous "$prev" "$T" -o "$WORK/w$seed.idx" > "$WORK/w$seed.json" 2>&1 ||
    fail "seed $seed: following scan failed: $(cat "$WORK/w$seed.json")"
  [ "$(json_field "$WORK/w$seed.json" followed)" = True ] ||
    fail "seed $seed: the scan did not follow btrfs changes: $(cat "$WORK/w$seed.json")"
  "$BIN/oans-scan" --quiet "$T" -o "$WORK/c$seed.idx"
  "$BIN/oans-cat" --blocks "$WORK/w$seed.idx" > "$WORK/w$seed.jsonl"
  "$BIN/oans-cat" --blocks "$WORK/c$seed.idx" > "$WORK/c$seed.jsonl"
  out=$(python3 "$PY" compare "$WORK/w$seed.jsonl" "$WORK/c$seed.jsonl") ||
    fail "seed $seed ($made): the followed index differs from a cold scan's:
$out"
  # plan --since the previous index: from the changes the index lists, the plan a join
  # of the two indexes gives.
  "$BIN/oans-plan" --json --since "$prev" "$WORK/w$seed.idx" -o "$WORK/l$seed.plan" > "$WORK/l$seed.json" 2>&1 ||
    fail "seed $seed: plan --since failed: $(cat "$WORK/l$seed.json")"
  [ "$(json_field "$WORK/l$seed.json" since_listed)" = True ] ||
    fail "seed $seed: plan --since did not use the index's list of changes: $(cat "$WORK/l$seed.json")"
  "$BIN/oans-plan" --quiet --since-join --since "$prev" "$WORK/w$seed.idx" -o "$WORK/j$seed.plan" ||
    fail "seed $seed: plan --since-join failed"
  "$BIN/oans-cat" "$WORK/l$seed.plan" | sed 1d > "$WORK/l$seed.rounds"
  "$BIN/oans-cat" "$WORK/j$seed.plan" | sed 1d > "$WORK/j$seed.rounds"
  cmp -s "$WORK/l$seed.rounds" "$WORK/j$seed.rounds" ||
    fail "seed $seed: the plan from the listed changes differs from the join's: $(diff "$WORK/l$seed.rounds" "$WORK/j$seed.rounds" | head -5)"
  pass "seed $seed ($made): $out; $(json_field "$WORK/w$seed.json" changed_inodes) inodes looked at; plan --since as the join's ($(json_field "$WORK/l$seed.json" planned_bytes) bytes planned, $(json_field "$WORK/l$seed.json" since_left_out) files left out)"
  if [ "$seed" = 3 ]; then  # an index on standard input, as from a pipe
    "$BIN/oans-plan" --quiet --since "$prev" -o "$WORK/p$seed.plan" - < "$WORK/w$seed.idx" ||
      fail "seed $seed: plan --since of an index on standard input failed"
    "$BIN/oans-cat" "$WORK/p$seed.plan" | sed 1d | cmp -s - "$WORK/l$seed.rounds" ||
      fail "seed $seed: the plan from standard input differs"
  fi
  prev=$WORK/w$seed.idx
done

# Nothing changed: no directory is read, no file stat'ed or opened. Settled first, so
# that the records this scan carries are not racy for the next one, which counts reads.
sync
settle
# LeakSanitizer cannot run under ptrace: leaks are checked in every other run of the scan.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -y -o "$WORK/strace.txt" -e trace=openat,openat2,open,newfstatat,statx,fstat,getdents64 \
  "$BIN/oans-scan" --json --previous "$prev" "$T" -o "$WORK/warm.idx" > "$WORK/warm.json" 2>&1
[ "$(json_field "$WORK/warm.json" followed)" = True ] || fail "warm scan did not follow: $(cat "$WORK/warm.json")"
[ "$(json_field "$WORK/warm.json" changed_inodes)" = 0 ] || fail "warm scan saw changes: $(cat "$WORK/warm.json")"
# Calls on the tree (strace -y names each descriptor's path): the root's open and stat only.
calls=$(grep -c "$T/" "$WORK/strace.txt" || true)
[ "$calls" -eq 0 ] || fail "warm scan made $calls calls below the root: $(grep "$T/" "$WORK/strace.txt" | head)"
grep "getdents64" "$WORK/strace.txt" | grep -q "$T" && fail "warm scan read a directory of the tree"
python3 "$PY" compare <("$BIN/oans-cat" --blocks "$WORK/warm.idx") <("$BIN/oans-cat" --blocks "$prev") >/dev/null ||
  fail "warm index differs from the previous one"
pass "unchanged: 0 inodes looked at, no directory read and no file opened or stat'ed below the root, the same records"
# oans-plan --since: an index that holds exactly what the previous one held plans
# nothing, from the headers alone; one change and it plans again.
"$BIN/oans-plan" --json --since "$prev" "$WORK/warm.idx" -o "$WORK/warm.plan" > "$WORK/warm-plan.json" 2>&1
[ "$(json_field "$WORK/warm-plan.json" unchanged_since)" = True ] ||
  fail "the plan read an unchanged index: $(cat "$WORK/warm-plan.json")"
[ "$(json_field "$WORK/warm-plan.json" planned_bytes)" = 0 ] || fail "unchanged index, yet a plan"
"$BIN/oans-apply" --quiet "$WORK/warm.plan" || fail "the empty plan does not apply"
# The same from standard input, which --since reads twice.
"$BIN/oans-plan" --json --since "$prev" -o "$WORK/stdin.plan" - < "$WORK/warm.idx" > "$WORK/stdin-plan.json" 2>&1 ||
  fail "plan --since of an index on standard input failed: $(cat "$WORK/stdin-plan.json")"
[ "$(json_field "$WORK/stdin-plan.json" unchanged_since)" = True ] ||
  fail "the plan read an unchanged index on standard input: $(cat "$WORK/stdin-plan.json")"
pass "plan --since of the unchanged index: headers only, nothing planned, applied"

# A reflinked copy is given the hashes of the file whose extents it shares; only the
# new file is read.
big=$(find "$T" -type f -size +150k -not -path "*/nocow/*" -print | sort | sed -n 1p)
[ -n "$big" ] || fail "no large file to copy"
cp --reflink=always "$big" "$T/reflinked"
# Planted symlinks, to a file and to a directory outside the tree: never followed.
ln -s /etc/passwd "$T/to-passwd"
ln -s /etc "$T/to-etc"
rand_file "$T/fresh" 300000 77
sync
"$BIN/oans-scan" --json --previous "$WORK/warm.idx" "$T" -o "$WORK/reflink.idx" > "$WORK/reflink.json" 2>&1
[ "$(json_field "$WORK/reflink.json" same_extents)" = 1 ] || fail "reflinked copy not matched: $(cat "$WORK/reflink.json")"
[ "$(json_field "$WORK/reflink.json" hashed)" = 1 ] || fail "more than the new file read: $(cat "$WORK/reflink.json")"
# The new file's 300000 bytes are read, or taken from btrfs's checksums (lib/scan/csum.h).
got=$(( $(json_field "$WORK/reflink.json" bytes_read) + $(json_field "$WORK/reflink.json" checksum_bytes) ))
[ "$got" = 300000 ] || fail "bytes read or from checksums: $got: $(cat "$WORK/reflink.json")"
"$BIN/oans-scan" --quiet "$T" -o "$WORK/reflink-cold.idx"
python3 "$PY" compare <("$BIN/oans-cat" --blocks "$WORK/reflink.idx") <("$BIN/oans-cat" --blocks "$WORK/reflink-cold.idx") ||
  fail "after a reflinked copy the followed index differs from a cold scan's"
"$BIN/oans-cat" "$WORK/reflink.idx" | grep -q '/etc\|to-passwd\|to-etc' && fail "a planted symlink was followed"
pass "a reflinked copy took the hashes of the extents it shares: only the new file's 300000 bytes read or taken from checksums"
"$BIN/oans-plan" --json --since "$WORK/warm.idx" "$WORK/reflink.idx" -o "$WORK/reflink.plan" > "$WORK/reflink-plan.json" 2>&1
[ "$(json_field "$WORK/reflink-plan.json" unchanged_since)" = False ] || fail "a changed index taken for unchanged"
prev=$WORK/reflink.idx

# A file removed and its space written again by a new file with other data: the new
# file's extents are those the removed file's record names, yet its keys are its own.
first_physical() { xfs_io -c fiemap "$1" | awk 'NR == 2 { print $3 }'; }
rand_file "$T/gone" 200000 91
sync
"$BIN/oans-scan" --quiet --previous "$prev" "$T" -o "$WORK/gone.idx"
was=$(first_physical "$T/gone")
rm "$T/gone"
sync
reused=
for k in 1 2 3 4 5 6 7 8; do
  rand_file "$T/later$k" 200000 $((91 + k))
  sync
  [ "$(first_physical "$T/later$k")" = "$was" ] && { reused=$T/later$k; break; }
done
[ -n "$reused" ] || fail "btrfs wrote no new file where the removed one was ($was); the case is not tested"
"$BIN/oans-scan" --quiet --previous "$WORK/gone.idx" "$T" -o "$WORK/later.idx"
"$BIN/oans-scan" --quiet "$T" -o "$WORK/later-cold.idx"
python3 "$PY" compare <("$BIN/oans-cat" --blocks "$WORK/later.idx") <("$BIN/oans-cat" --blocks "$WORK/later-cold.idx") ||
  fail "a new file in a removed file's space took the removed file's keys"
pass "a new file written where a removed one was: its own keys, not the removed file's"
prev=$WORK/later.idx

# A new subvolume below the root: the walk takes over, and says so once.
btrfs subvolume create "$T/sub" >/dev/null
echo data > "$T/sub/file"
sync
"$BIN/oans-scan" --previous "$prev" "$T" -o "$WORK/sub.idx" 2> "$WORK/sub.err"
[ "$(grep -c 'not following btrfs changes' "$WORK/sub.err")" = 1 ] || fail "no single notice: $(cat "$WORK/sub.err")"
grep -q 'subvolume' "$WORK/sub.err" || fail "the notice does not say why: $(cat "$WORK/sub.err")"
pass "a new subvolume below the root: walked, said once"

# follow_cold NAME: a scan from $prev, equal to a cold scan's; prev becomes it.
follow_cold() {
  sync
  "$BIN/oans-scan" --json --previous "$prev" "$T" -o "$WORK/$1.idx" > "$WORK/$1.json" 2>&1 ||
    fail "$1: scan failed: $(cat "$WORK/$1.json")"
  "$BIN/oans-scan" --quiet "$T" -o "$WORK/$1-cold.idx"
  out=$(python3 "$PY" compare <("$BIN/oans-cat" --blocks "$WORK/$1.idx") <("$BIN/oans-cat" --blocks "$WORK/$1-cold.idx")) ||
    fail "$1: the index differs from a cold scan's:
$out"
  prev=$WORK/$1.idx
}

# Snapshots of that subvolume taken and deleted below the root, between random changes
# to it: each scan follows (a new snapshot takes the subvolume's records, a deleted
# one's are dropped), and each index is a cold scan's.
python3 "$PY" make "$T/sub" 2
sync
"$BIN/oans-scan" --quiet "$T" -o "$WORK/s0.idx"
prev=$WORK/s0.idx
for k in 1 2 3 4; do
  made=$(python3 "$PY" change "$T/sub" $((100 + k)) 6)
  btrfs subvolume snapshot -r "$T/sub" "$T/snap$k" > /dev/null
  made="$made, snapshot, $(python3 "$PY" change "$T/sub" $((200 + k)) 6)"
  if [ "$k" -ge 3 ]; then
    btrfs subvolume delete "$T/snap$((k - 2))" > /dev/null
    made="$made, snapshot $((k - 2)) deleted"
  fi
  follow_cold "s$k"
  [ "$(json_field "$WORK/s$k.json" followed)" = True ] ||
    fail "snapshot $k ($made): the scan did not follow btrfs changes: $(cat "$WORK/s$k.json")"
  pass "snapshot $k ($made): $out; $(json_field "$WORK/s$k.json" changed_inodes) inodes looked at"
done

# A directory of the outer subvolume renamed, another made at its old path, and the
# subvolume that was below it moved there: its own paths did not change.
mkdir "$T/box"
mv "$T/sub" "$T/box/sub"
follow_cold box  # a subvolume moved: walked
mv "$T/box" "$T/box2"
mkdir "$T/box"
mv "$T/box2/sub" "$T/box/sub"
follow_cold box-again
[ "$(json_field "$WORK/box-again.json" followed)" = True ] || fail "box-again: not followed: $(cat "$WORK/box-again.json")"
pass "a directory renamed and remade around a subvolume: followed, $out"
# A subvolume moved out of the root, then back: dropped, then not taken for the one the
# index knew (it holds none of its records).
btrfs subvolume create "$T/extra" > /dev/null
python3 "$PY" make "$T/extra" 3
follow_cold extra  # a new subvolume: walked
mv "$T/extra" "$MNT/away"
follow_cold away
[ "$(json_field "$WORK/away.json" followed)" = True ] || fail "away: not followed: $(cat "$WORK/away.json")"
follow_cold still-away
[ "$("$BIN/oans-cat" "$WORK/still-away.idx" | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["same_as_followed"]); sys.stdin.read()')" = True ] ||
  fail "nothing changed, yet the index is not the same as the one it followed"
mv "$MNT/away" "$T/extra"
follow_cold back
pass "a subvolume moved out of the root and back: dropped, then recorded again whole ($out)"
