#!/usr/bin/env bash
# Generations: a scan with --previous re-reads only new and changed files, sees data
# shared since, and an already-deduped tree costs no data reads and plans nothing.
# Covers unchanged, modified, appended, truncated, renamed, replaced under the same name,
# deleted and new files, a file renamed and rewritten with its old mtime, an interrupted
# index used as --previous (cut after a batch and inside one) and a damaged one refused,
# oans-diff and --since.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
tree_and_copy
settle
json_field() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$1" "$2"; }

"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/gen1.idx"
"$BIN/oans-plan" --quiet "$WORK/gen1.idx" -o "$WORK/plan1"
"$BIN/oans-apply" --quiet "$WORK/plan1"
sync

# Warm: nothing changed since the apply. No data is read and the plan is empty.
"$BIN/oans-scan" --json --previous "$WORK/gen1.idx" "$MNT" -o "$WORK/gen2.idx" > "$WORK/scan2.json" 2>&1
[ "$(json_field "$WORK/scan2.json" bytes_read)" = 0 ] || fail "warm scan read data: $(cat "$WORK/scan2.json")"
[ "$(json_field "$WORK/scan2.json" hashed)" = 0 ] || fail "warm scan hashed files"
"$BIN/oans-plan" --json "$WORK/gen2.idx" -o "$WORK/plan2" > "$WORK/plan2.json" 2>&1
[ "$(json_field "$WORK/plan2.json" planned_bytes)" = 0 ] || fail "warm plan not empty: $(cat "$WORK/plan2.json")"
[ "$(json_field "$WORK/plan2.json" shared_bytes)" -gt 0 ] || fail "shared data since the last run not seen"
pass "warm re-run of a deduped tree: 0 bytes read, empty plan, sharing seen through refreshed extents"
# btrfs names every inode with an item in a tree block written since (a superset: the
# dedupe rewrites the copies' leaves, and a leaf it fills pushes items into its
# neighbours, which may hold originals; how many depends on when the commits fell).
# Every file it does not name is carried unopened.
unopened=$(json_field "$WORK/scan2.json" unopened)
changed=$(json_field "$WORK/scan2.json" changed_inodes)
files=$(json_field "$WORK/scan2.json" files)
[ "$changed" -lt "$files" ] || echo "note: btrfs named $changed inodes for $files files"
[ "$unopened" -ge $((files - changed)) ] \
  || fail "$unopened files left unopened, but btrfs named only $changed inodes of $files files: $(cat "$WORK/scan2.json")"
pass "$unopened of $files files were not opened ($changed inodes named by btrfs since the first scan)"

# A day of changes.
python3 - "$MNT" <<'PY'
import os, random, sys
m = sys.argv[1]
r = random.Random(5)
with open(f"{m}/copy/src/file20.bin", "r+b") as f: f.seek(10); f.write(b"modified")   # modified, same size
with open(f"{m}/copy/src/file21.bin", "ab") as f: f.write(b"appended")                 # appended
os.truncate(f"{m}/copy/src/file22.bin", 4096)                                          # truncated
os.rename(f"{m}/copy/src/file23.bin", f"{m}/copy/src/file23.renamed")                  # renamed
os.unlink(f"{m}/copy/src/file24.bin")                                                  # deleted
with open(f"{m}/copy/src/file25.new", "wb") as f: f.write(r.randbytes(os.path.getsize(f"{m}/copy/src/file25.bin")))
os.rename(f"{m}/copy/src/file25.new", f"{m}/copy/src/file25.bin")                      # replaced, same name
os.makedirs(f"{m}/copy/new", exist_ok=True)
with open(f"{m}/orig/media/big1.bin", "rb") as s, open(f"{m}/copy/new/big1.again", "wb") as d:
    d.write(s.read())                                                                   # new file, a duplicate
PY
sync
settle  # the changes a second old: gen3's records of them settled, for the scans that count reads later
"$BIN/oans-scan" --json --previous "$WORK/gen2.idx" "$MNT" -o "$WORK/gen3.idx" > "$WORK/scan3.json" 2>&1
hashed=$(json_field "$WORK/scan3.json" hashed)
same=$(json_field "$WORK/scan3.json" same_extents)
# Re-read: modified, appended, truncated, replaced, new; the renamed file (a new ctime)
# too, unless its extents are those recorded (btrfs: the same blocks hold the same data).
[ "$hashed" = 6 ] || [ "$hashed/$same" = 5/1 ] ||
  fail "expected 6 files re-read (or 5 and the renamed one proven by its extents), got $hashed/$same: $(cat "$WORK/scan3.json")"
pass "only the new, changed or renamed files were read or proven by their extents: $hashed read, $same by extents"

# The changes on stdout, the summary on stderr (stdout carries the changes).
"$BIN/oans-diff" --json "$WORK/gen2.idx" "$WORK/gen3.idx" > "$WORK/diff.json" 2> "$WORK/diff-summary.json"
python3 - "$WORK/diff.json" "$WORK/diff-summary.json" <<'PY' || fail "diff wrong: $(cat "$WORK/diff.json" "$WORK/diff-summary.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
s = json.loads(open(sys.argv[2]).read())
assert all("change" in l for l in lines), lines
ch = {(l["change"], l["path"].split("/copy/")[-1]) for l in lines}
want = {("changed", "src/file20.bin"), ("changed", "src/file21.bin"), ("changed", "src/file22.bin"),
        ("renamed", "src/file23.renamed"), ("removed", "src/file24.bin"), ("removed", "src/file25.bin"),
        ("added", "src/file25.bin"), ("added", "new/big1.again")}
missing = want - ch
assert not missing, missing
assert s["added"] == 2 and s["removed"] == 2 and s["changed"] == 3 and s["renamed"] == 1, s
PY
pass "oans-diff lists added, removed, changed and renamed files"

"$BIN/oans-plan" --json --since "$WORK/gen2.idx" "$WORK/gen3.idx" -o "$WORK/plan3" > "$WORK/plan3.json" 2>&1
"$BIN/oans-cat" "$WORK/plan3" | grep -q "big1.again" || fail "new duplicate not planned"
n_groups=$(json_field "$WORK/plan3.json" whole_file_groups)
[ "$n_groups" -le 3 ] || fail "--since planned $n_groups whole-file groups, expected only those with changed files"
before=$(checksums "$MNT")
"$BIN/oans-apply" --quiet "$WORK/plan3"
sync
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy/new" 4096)" ] || fail "new duplicate not shared"
pass "--since plans only groups touching new or changed files; the new copy is shared"

# The apply changed big1.again's extents but none of its identity (a dedupe keeps mtime
# and ctime): the next scan must map it again and see it sharing big1.bin's extents.
"$BIN/oans-scan" --json --previous "$WORK/gen3.idx" "$MNT" -o "$WORK/gen3b.idx" > "$WORK/scan3b.json" 2>&1
[ "$(json_field "$WORK/scan3b.json" bytes_read)" = 0 ] || fail "nothing changed in content, yet data was read"
"$BIN/oans-cat" "$WORK/gen3b.idx" > "$WORK/gen3b.json"
"$BIN/oans-cat" "$WORK/gen3.idx" > "$WORK/gen3.json"
python3 - "$WORK/gen3.json" "$WORK/gen3b.json" <<'PY' || fail "extents of a file deduped since the previous scan not refreshed"
import json, sys
def files(p):
    out = {}
    for line in open(p):
        r = json.loads(line)
        if r.get("type") == "file":
            out[r["path"]] = r
    return out
before, after = files(sys.argv[1]), files(sys.argv[2])
key = lambda r: [(x[1], x[2]) for x in r["extents"]]
src = next(v for k, v in after.items() if k.endswith("orig/media/big1.bin"))
dst = next(v for k, v in after.items() if k.endswith("copy/new/big1.again"))
old = next(v for k, v in before.items() if k.endswith("copy/new/big1.again"))
assert key(dst) == key(src), (key(dst), key(src))
assert key(old) != key(src), "the test needs big1.again unshared before the apply"
PY
pass "a file deduped since the previous scan (same mtime and ctime) is mapped again and seen shared"

# An interrupted scan (batches written, no trailer) is accepted as --previous.
python3 - "$WORK/gen3.idx" "$WORK/cut.idx" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
cut = data.rfind(b"\x28\xb5\x2f\xfd")   # start of the last zstd frame: the trailer
open(sys.argv[2], "wb").write(data[:cut])
PY
set +e
"$BIN/oans-plan" "$WORK/cut.idx" -o "$WORK/p" 2> "$WORK/err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "no trailer" "$WORK/err" || fail "plan accepted an incomplete index"
"$BIN/oans-scan" --json --previous "$WORK/cut.idx" "$MNT" -o "$WORK/gen4.idx" > "$WORK/scan4.json" 2>&1
grep -q "incomplete" "$WORK/scan4.json" || fail "no warning about the incomplete previous index"
[ "$(json_field "$WORK/scan4.json" bytes_read)" = 0 ] || fail "interrupted index not reused"
pass "an interrupted index is accepted as --previous with a warning, and reused"

# The same index cut inside its batch: accepted as interrupted, with a warning, nothing of
# the cut batch reused.
python3 - "$WORK/gen3.idx" "$WORK/cutin.idx" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
magic = b"\x28\xb5\x2f\xfd"
starts = [i for i in range(len(data)) if data.startswith(magic, i)]
batch, trailer = starts[1], starts[-1]
open(sys.argv[2], "wb").write(data[:(batch + trailer) // 2])
PY
"$BIN/oans-scan" --json --previous "$WORK/cutin.idx" "$MNT" -o "$WORK/gen5.idx" > "$WORK/scan5.json" 2>&1
grep -q "incomplete" "$WORK/scan5.json" || fail "no warning about the cut previous index"
pass "an index cut inside a batch is accepted as --previous with a warning"

# A fresh scan, no --previous: what every hash must be.
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/fresh.idx"
same_hashes() {
  "$BIN/oans-cat" "$1" > "$WORK/a.json"
  "$BIN/oans-cat" "$2" > "$WORK/b.json"
  python3 - "$WORK/a.json" "$WORK/b.json" <<'PY'
import json, sys
def hashes(p):
    return {r["path"]: r.get("hash") for r in map(json.loads, open(p)) if r.get("type") == "file"}
a, b = hashes(sys.argv[1]), hashes(sys.argv[2])
assert a == b, sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
PY
}

# Damaged, not cut: a batch whose checksum fails is refused, with the file and the
# batch's offset, and no hash of it is used; --previous-damaged=rescan reads every file.
python3 - "$WORK/gen3.idx" "$WORK/bad.idx" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
magic = b"\x28\xb5\x2f\xfd"
starts = [i for i in range(len(data)) if data.startswith(magic, i)]
data[starts[-1] - 1] ^= 0x01   # last byte of the frame before the trailer: its checksum
open(sys.argv[2], "wb").write(data)
print(starts[-2], file=open(sys.argv[2] + ".offset", "w"))
PY
set +e
"$BIN/oans-scan" --quiet --previous "$WORK/bad.idx" "$MNT" -o "$WORK/gen6.idx" 2> "$WORK/err"; rc=$?
set -e
cat "$WORK/err"
[ $rc = 2 ] || fail "a damaged --previous was not refused (exit $rc)"
grep -q "bad.idx is damaged" "$WORK/err" || fail "the damaged file is not named"
grep -q "byte $(cat "$WORK/bad.idx.offset")" "$WORK/err" || fail "the damaged frame's offset is not named"
grep -q -- "--previous-damaged=rescan" "$WORK/err" || fail "no way out offered"
[ ! -e "$WORK/gen6.idx" ] || fail "an index was written although the scan was refused"
"$BIN/oans-scan" --json --previous "$WORK/bad.idx" --previous-damaged=rescan "$MNT" -o "$WORK/gen6.idx" > "$WORK/scan6.json" 2>&1
grep -q "damaged" "$WORK/scan6.json" || fail "no warning about ignoring the damaged index"
[ "$(json_field "$WORK/scan6.json" reused)" = 0 ] || fail "hashes reused from a damaged index"
same_hashes "$WORK/gen6.idx" "$WORK/fresh.idx" || fail "hashes after a damaged --previous differ from a fresh scan"
"$BIN/oans-plan" "$WORK/bad.idx" -o "$WORK/p" 2> "$WORK/err" && fail "oans-plan accepted a damaged index"
grep -q "byte $(cat "$WORK/bad.idx.offset")" "$WORK/err" || fail "oans-plan does not name the offset: $(cat "$WORK/err")"
pass "a damaged --previous is refused with its offset (exit 2); --previous-damaged=rescan reads every file"

# Renamed and rewritten with the old mtime restored (same inode, same size): read again,
# because its ctime changed; every hash equals a fresh scan's.
before=$(checksums "$MNT")
python3 - "$MNT" <<'PY'
import os, random, sys
m = sys.argv[1]
p, q = f"{m}/copy/src/file30.bin", f"{m}/copy/src/file30.moved"
st = os.stat(p)
os.rename(p, q)
with open(q, "r+b") as f:
    f.write(random.Random(31).randbytes(st.st_size))
os.utime(q, ns=(st.st_atime_ns, st.st_mtime_ns))
assert os.stat(q).st_mtime_ns == st.st_mtime_ns and os.stat(q).st_ino == st.st_ino
PY
sync
after_rewrite=$(checksums "$MNT")
[ "$before" != "$after_rewrite" ] || fail "the test needs file30 rewritten"
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/fresh2.idx"
"$BIN/oans-scan" --json --previous "$WORK/gen3b.idx" "$MNT" -o "$WORK/gen7.idx" > "$WORK/scan7.json" 2>&1
[ "$(json_field "$WORK/scan7.json" hashed)" = 1 ] || fail "expected only the rewritten file read: $(cat "$WORK/scan7.json")"
same_hashes "$WORK/gen7.idx" "$WORK/fresh2.idx" || fail "a renamed, rewritten file kept its old hashes"
[ "$after_rewrite" = "$(checksums "$MNT")" ] || fail "contents changed during the scans"
pass "a file renamed and rewritten with its old mtime is read again; hashes equal a fresh scan's"
