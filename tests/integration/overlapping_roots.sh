#!/usr/bin/env bash
# Roots that overlap: a root given twice, or below another root, is scanned once (said
# once on stderr, naming both); the index holds each inode once, from a walk and from a
# scan following btrfs changes; a plan, also from the same index given twice or from
# merged overlapping indexes, names each destination once; apply dedupes the real size
# of the duplicate (1 MiB for a 1 MiB pair). A root that is a symlink is refused naming
# its target (oans-scan and oans run); a root below a symlinked directory is scanned by
# its real path. Every file's content, owner and mode unchanged.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
mkdir -p "$MNT/srv/fz/sub" "$MNT/srv/other"
rand_file "$MNT/srv/fz/a" $((1 << 20)) 1
cp --reflink=never "$MNT/srv/fz/a" "$MNT/srv/fz/sub/b"
rand_file "$MNT/srv/other/c" $((256 << 10)) 2
chown 1234:5678 "$MNT/srv/fz/a" && chmod 0640 "$MNT/srv/fz/a"
chown 4321:8765 "$MNT/srv/fz/sub/b" && chmod 0604 "$MNT/srv/fz/sub/b"
sync
meta() { find "$MNT/srv" -printf '%u %g %m %p\n' | sort; }
meta_before=$(meta)

# once_each IDX ROOT... : the header's roots are ROOT..., and no inode or path is
# recorded twice.
once_each() {
  local idx=$1; shift
  "$BIN/oans-cat" "$idx" | python3 -c '
import json, sys
roots = sys.argv[1:]
lines = [json.loads(l) for l in sys.stdin]
head = lines[0]
assert head["roots"] == roots, ("roots", head["roots"], roots)
files = [l for l in lines if l["type"] == "file"]
ids = [(head["filesystems"][f["fs"]]["uuid"], head["filesystems"][f["fs"]]["subvolume"], f["ino"]) for f in files]
paths = [f["path"] for f in files]
assert len(set(ids)) == len(ids), ("an inode recorded twice", sorted(paths))
assert len(set(paths)) == len(paths), ("a path recorded twice", sorted(paths))
dirs = [l["path"] for l in lines if l["type"] == "dir"]
assert len(set(dirs)) == len(dirs), ("a directory recorded twice", sorted(dirs))
print(len(files))
' "$@"
}

# Nested roots, given inner first: one root kept, said once naming both.
"$BIN/oans-scan" "$MNT/srv/fz" "$MNT/srv" -o "$WORK/nested.idx" 2> "$WORK/nested.err"
cat "$WORK/nested.err"
[ "$(grep -c "$MNT/srv/fz lies below $MNT/srv" "$WORK/nested.err")" = 1 ] || fail "nested root not said once"
n=$(once_each "$WORK/nested.idx" "$MNT/srv") || fail "nested roots: $n"
[ "$n" = 3 ] || fail "nested roots: $n records, expected 3"
pass "nested roots: one root, each of the 3 files recorded once"

# The same root twice, and again with a trailing slash.
"$BIN/oans-scan" "$MNT/srv/fz" "$MNT/srv/fz" "$MNT/srv/fz/" -o "$WORK/repeated.idx" 2> "$WORK/repeated.err"
cat "$WORK/repeated.err"
[ "$(grep -c "$MNT/srv/fz is given more than once" "$WORK/repeated.err")" = 1 ] || fail "repeated root not said once"
grep -q "$MNT/srv/fz/ and $MNT/srv/fz are the same root" "$WORK/repeated.err" || fail "a root spelt otherwise not said"
n=$(once_each "$WORK/repeated.idx" "$MNT/srv/fz") || fail "repeated root: $n"
[ "$n" = 2 ] || fail "repeated root: $n records, expected 2"
pass "repeated root: scanned once"

# A scan following btrfs changes from the nested index, the roots given nested again:
# the same canonical roots, so it follows, and records a new file once.
rand_file "$MNT/srv/fz/sub/new" $((64 << 10)) 3
sync
meta_before=$(meta)
"$BIN/oans-scan" --json --previous "$WORK/nested.idx" "$MNT/srv" "$MNT/srv/fz/sub" -o "$WORK/followed.idx" \
  > "$WORK/followed.err" 2>&1
cat "$WORK/followed.err"
grep -q '"followed":true' "$WORK/followed.err" || fail "the scan did not follow btrfs changes"
n=$(once_each "$WORK/followed.idx" "$MNT/srv") || fail "followed scan: $n"
[ "$n" = 4 ] || fail "followed scan: $n records, expected 4"
pass "followed scan of nested roots: each of the 4 files recorded once"
before=$(checksums "$MNT")

# check_plan PLAN: no destination (file identity and offset) named twice, none its own
# source, and 1 MiB planned.
check_plan() {
  "$BIN/oans-cat" "$1" | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
head = lines[0]
fs = head["filesystems"]
seen, planned = set(), 0
for r in (l for l in lines if l["type"] == "round"):
    ident = [(fs[f["fs"]]["uuid"], fs[f["fs"]]["subvolume"], f["ino"]) for f in r["files"]]
    for op in r["ops"]:
        for d in op["dests"]:
            key = (ident[d["file"]], d["offset"])
            assert key not in seen, ("a destination named twice", r["files"][d["file"]]["path"])
            assert ident[d["file"]] != ident[op["source"]], "a file deduped against itself"
            seen.add(key)
            planned += op["length"]
assert planned == 1 << 20 == head["planned_bytes"], (planned, head["planned_bytes"])
' || fail "plan $1"
}
"$BIN/oans-plan" --quiet "$WORK/nested.idx" -o "$WORK/nested.plan"
check_plan "$WORK/nested.plan"
"$BIN/oans-plan" --quiet "$WORK/repeated.idx" "$WORK/repeated.idx" -o "$WORK/twice.plan"
check_plan "$WORK/twice.plan"
"$BIN/oans-plan" --quiet "$WORK/nested.idx" "$WORK/repeated.idx" -o "$WORK/merged.plan"
check_plan "$WORK/merged.plan"
pass "plans from nested roots, an index given twice and merged indexes: each destination once, 1 MiB"

"$BIN/oans-apply" --json "$WORK/nested.plan" > "$WORK/apply.json"
cat "$WORK/apply.json"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["bytes_deduped"] == 1 << 20, s
' "$WORK/apply.json" || fail "apply did not dedupe exactly 1 MiB"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ "$meta_before" = "$(meta)" ] || fail "owners or modes changed: $(diff <(echo "$meta_before") <(meta))"
pass "apply deduped 1 MiB for the 1 MiB pair; contents, owners and modes unchanged"

# A root that is a symlink is refused, naming its target; one below a symlinked
# directory is scanned by its real path.
ln -s srv "$MNT/link"
for cmd in "$BIN/oans-scan -o $WORK/link.idx" "$BIN/oans run --state-dir $WORK/state"; do
  set +e
  $cmd "$MNT/link" > /dev/null 2> "$WORK/link.err"
  rc=$?
  set -e
  cat "$WORK/link.err"
  [ $rc = 2 ] || fail "$cmd of a symlink root: exit $rc, expected 2"
  grep -q "$MNT/link is a symlink to $MNT/srv; give the target itself" "$WORK/link.err" || fail "$cmd: no clear message"
done
[ ! -e "$WORK/link.idx" ] && [ ! -e "$WORK/state" ] || fail "a refused symlink root left an output"
"$BIN/oans-scan" --quiet "$MNT/link/fz" -o "$WORK/below-link.idx"
n=$(once_each "$WORK/below-link.idx" "$MNT/srv/fz") || fail "root below a symlink: $n"
pass "a symlink root refused naming its target; a root below a symlink scanned by its real path"
