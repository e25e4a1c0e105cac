#!/usr/bin/env bash
# Whole files only on ext4: the scan opens no file whose size no other file has (counted
# with strace); those are recorded unread, the plan leaves them out, hardlink mode still
# links every duplicate, and a later scan that needs their hashes reads them. Two files
# of one size (a pair) are mapped, not read: the plan pairs them by size, apply's compare
# links those equal and leaves the others, and the next scan reads a pair left unlinked.
# --pair-by-size=always pairs files so in every mode, in a first scan; the next scan with
# --previous reads them for their partial duplicates. Every file's content, owner and mode stay as
# they were.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v strace >/dev/null || { echo "strace missing (scripts/install-deps)"; exit 77; }
# LeakSanitizer cannot run under ptrace: leaks are looked for by the other tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mkfs_mount ext4 256M
python3 - "$MNT" <<'PY'
import os, random, sys
m, r = sys.argv[1], random.Random(37)
os.makedirs(f"{m}/uniq")
for i in range(200):  # 200 sizes met once each
    p = f"{m}/uniq/u{i}.bin"
    open(p, "wb").write(r.randbytes(10000 + 131 * i))
    os.chown(p, 1000 + i % 3, 100 + i % 2)
    os.chmod(p, (0o640, 0o600, 0o644, 0o444)[i % 4])
for d in ("a", "b"):
    os.makedirs(f"{m}/dup/{d}")
for i in range(20):  # 20 duplicates, copied below with owner, mode and mtime
    p = f"{m}/dup/a/d{i}.bin"
    open(p, "wb").write(r.randbytes(500000 + 97 * i))
    os.chown(p, 1000 + i % 3, 100)
    os.chmod(p, (0o640, 0o600)[i % 2])
os.makedirs(f"{m}/same")
for n in ("x", "y"):  # one size, two contents: paired by size, never linked
    open(f"{m}/same/s{n}.bin", "wb").write(r.randbytes(400000))
for n in ("x", "y"):  # the same, with mtimes that differ too (a linking rule refuses)
    open(f"{m}/same/q{n}.bin", "wb").write(r.randbytes(410000))
os.makedirs(f"{m}/three")
t = r.randbytes(300001)
for n in range(3):  # three files of one size: read
    open(f"{m}/three/t{n}.bin", "wb").write(t)
PY
cp -a "$MNT/dup/a/." "$MNT/dup/b/"
touch -r "$MNT/same/sx.bin" "$MNT/same/sy.bin" "$MNT/three/t0.bin" "$MNT/three/t1.bin" "$MNT/three/t2.bin"
touch -d '2020-01-01' "$MNT/same/qy.bin"
sync
before=$(checksums "$MNT")
owners() { (cd "$MNT" && find . -type f -printf '%p %U %G %m\n' | sort); }
owners_before=$(owners)

# The scan under strace: every open, with a summary (-C) of the calls counted.
traced_scan() {
  strace -f -C -e trace=open,openat,openat2 -o "$WORK/$1.trace" \
    "$BIN/oans-scan" --quiet --json --storage=hdd "${@:2}" "$MNT" -o "$WORK/$1.idx" > "$WORK/$1.json" 2>&1 \
    || fail "scan $1: $(tail -3 "$WORK/$1.json")"
}
opens_of() { grep -Ec "open(at2?)?\(.*[\"/]$2\"" "$WORK/$1.trace" || true; }
total_opens() { awk '$NF ~ /^open(at2?)?$/ { n += $4 } END { print n + 0 }' "$WORK/$1.trace"; }

traced_scan whole --whole-files-only
traced_scan every
u_whole=$(opens_of whole 'u[0-9]+\.bin') d_whole=$(opens_of whole 'd[0-9]+\.bin')
s_whole=$(opens_of whole 's[xy]\.bin') u_every=$(opens_of every 'u[0-9]+\.bin')
echo "opens of unique-size files: $u_whole with --whole-files-only, $u_every without;" \
     "opens in all: $(total_opens whole) with, $(total_opens every) without"
[ "$u_every" -ge 200 ] || fail "the scan without --whole-files-only opened $u_every unique-size files (trace broken?)"
[ "$u_whole" = 0 ] || fail "the whole-files-only scan opened $u_whole files of a unique size"
[ "$d_whole" -ge 40 ] && [ "$s_whole" -ge 2 ] || fail "the pairs were not mapped: $d_whole, $s_whole opens"
python3 - "$WORK/whole.json" <<'PY' || fail "scan summary: $(cat "$WORK/whole.json")"
import json, sys
s = json.load(open(sys.argv[1]))
# Only the three files of one size are read: the 22 pairs are mapped.
assert s["unread"] == 200 and s["size_paired"] == 44 and s["hashed"] == 3, s
assert s["files"] == 247 and s["errors"] == 0 and s["bytes_read"] == 3 * 300001, s
PY
"$BIN/oans-cat" "$WORK/whole.idx" > "$WORK/whole.txt" || fail "oans-cat"
pass "whole files only: no file of a unique size opened ($(total_opens whole) opens in all)"

# The plan leaves the unread records out; hardlink mode links every duplicate.
"$BIN/oans-plan" --json --whole-files-only "$WORK/whole.idx" -o "$WORK/plan" > "$WORK/plan.json" 2>&1 || fail "plan"
dup_bytes=$(cd "$MNT/dup/a" && stat -c %s d*.bin | awk '{ n += $1 } END { print n }')
python3 - "$WORK/plan.json" "$dup_bytes" <<'PY' || fail "plan summary: $(cat "$WORK/plan.json")"
import json, sys
s, dup = json.load(open(sys.argv[1])), int(sys.argv[2])
assert s["skipped_unread"] == 200 and s["skipped_errors"] == 0 and s["size_paired"] == 44, s
pairs = dup + 400000 + 410000
assert s["size_paired_bytes"] == pairs and s["duplicate_bytes"] == pairs + 2 * 300001, s
PY
# The report of duplicates names only files known equal: not the pairs.
"$BIN/oans-plan" --whole-files-only --format=fdupes "$WORK/whole.idx" > "$WORK/fdupes.txt" 2>/dev/null \
  || fail "plan --format=fdupes"
grep -q 't2\.bin' "$WORK/fdupes.txt" || fail "the report lost the three equal files: $(cat "$WORK/fdupes.txt")"
! grep -Eq '(d[0-9]+|[sq][xy])\.bin' "$WORK/fdupes.txt" || fail "the report names files paired by size alone"
"$BIN/oans-apply" --json --link=hard --journal "$WORK/journal" "$WORK/plan" > "$WORK/apply.json" 2> "$WORK/apply.err" \
  || fail "apply --link=hard: $(cat "$WORK/apply.err")"
python3 - "$WORK/apply.json" <<'PY' || fail "apply summary: $(cat "$WORK/apply.json")"
import json, sys
s = json.load(open(sys.argv[1]))
# The pairs that differ are no skip and no error, the one whose mtimes differ too
# included (compared before its refusal): 20 + 2 files linked.
assert s["files_linked"] == 22 and s["bytes_differed"] == 400000 + 410000, s
assert s["bytes_skipped"] == 0 and s["errors"] == 0 and s["files_changed"] == 0, s
PY
for i in $(seq 0 19); do
  [ "$(stat -c %i "$MNT/dup/a/d$i.bin")" = "$(stat -c %i "$MNT/dup/b/d$i.bin")" ] || fail "d$i.bin not linked"
done
[ "$(stat -c %h "$MNT/three/t0.bin")" = 3 ] || fail "the three equal files not linked"
[ "$(stat -c %i "$MNT/same/sx.bin")" != "$(stat -c %i "$MNT/same/sy.bin")" ] || fail "different contents linked"
[ "$(find "$MNT/uniq" -type f -links +1 | wc -l)" = 0 ] || fail "a unique-size file was linked"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ "$owners_before" = "$(owners)" ] || fail "owners or modes changed: $(diff <(echo "$owners_before") <(owners))"
pass "every duplicate linked, the pair that differs left; contents, owners and modes unchanged"

# The next whole-files-only scan reads the pair its plan found different: it is not
# paired again. The linked pairs are one file each now, of a unique size: unread.
sleep 1.1  # the files settled (a record made within a second of a change is not reused)
traced_scan again --whole-files-only --previous "$WORK/whole.idx"
python3 - "$WORK/again.json" <<'PY' || fail "scan after apply: $(cat "$WORK/again.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["size_paired"] == 0 and s["hashed"] == 4 and s["bytes_read"] == 2 * 400000 + 2 * 410000, s
PY
"$BIN/oans-plan" --json --whole-files-only "$WORK/again.idx" -o "$WORK/plan-again" > "$WORK/plan-again.json" 2>&1 \
  || fail "plan after apply"
grep -q '"planned_bytes":0' "$WORK/plan-again.json" || fail "planned again: $(cat "$WORK/plan-again.json")"
# And the scan after that reuses their keys: no pair by size again, nothing read.
traced_scan third --whole-files-only --previous "$WORK/again.idx"
python3 - "$WORK/third.json" <<'PY' || fail "third scan: $(cat "$WORK/third.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["size_paired"] == 0 and s["reused"] == 4 and s["hashed"] == 0 and s["bytes_read"] == 0, s
PY
pass "the next scans read the pairs found different once, then reuse their keys; nothing planned again"

# A later scan that plans blocks needs every hash: it reads the unread files then.
"$BIN/oans-scan" --quiet --json --previous "$WORK/whole.idx" "$MNT" -o "$WORK/later.idx" > "$WORK/later.json" 2>&1 \
  || fail "later scan: $(cat "$WORK/later.json")"
python3 - "$WORK/later.json" <<'PY' || fail "later scan: $(cat "$WORK/later.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["unread"] == 0 and s["hashed"] >= 200 and s["errors"] == 0, s
PY
"$BIN/oans-plan" --json "$WORK/later.idx" -o /dev/null > "$WORK/later-plan.json" 2>&1 || fail "plan of the later index"
grep -q '"skipped_unread":0' "$WORK/later-plan.json" || fail "later plan: $(cat "$WORK/later-plan.json")"
pass "a later scan without --whole-files-only reads the files left unread"

# oans run, applying hardlinks, passes --whole-files-only to its scan: a new copy is
# linked, and no file of a unique size is opened by any of its tools.
export OANS_STATE_BASE="$WORK/state"
head -c 300000 /dev/urandom > "$MNT/dup/n.bin"
cp -a "$MNT/dup/n.bin" "$MNT/dup/n-copy.bin"
before=$(checksums "$MNT")
owners_before=$(owners)
strace -f -e trace=open,openat,openat2 -o "$WORK/run.trace" "$BIN/oans" run --quiet --link=hard "$MNT" \
  || fail "oans run --link=hard"
u_run=$(opens_of run 'u[0-9]+\.bin')
[ "$u_run" = 0 ] || fail "oans run --link=hard opened $u_run files of a unique size"
[ "$(opens_of run 'n-copy\.bin')" -ge 1 ] || fail "oans run did not read the new copy (trace broken?)"
[ "$(stat -c %i "$MNT/dup/n.bin")" = "$(stat -c %i "$MNT/dup/n-copy.bin")" ] || fail "the new copy not linked"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ "$owners_before" = "$(owners)" ] || fail "owners or modes changed"
pass "oans run --link=hard scans whole files only: no file of a unique size opened"

# pairs_on_xfs IMAGE EQ DIFF DIFF_SIZE SEED: a new XFS image with two pairs by size, EQ1
# and EQ2 equal (1 MiB), DIFF1 and DIFF2 differing in their last byte, and u.bin alone.
pairs_on_xfs() {
  mkfs_mount xfs 512M "$1"
  rand_file "$MNT/${2}1.bin" 1048576 "$5"
  cp --reflink=never "$MNT/${2}1.bin" "$MNT/${2}2.bin"
  rand_file "$MNT/${3}1.bin" "$4" "$(($5 + 1))"
  cp --reflink=never "$MNT/${3}1.bin" "$MNT/${3}2.bin"
  printf 'x' | dd of="$MNT/${3}2.bin" bs=1 seek="$(($4 - 1))" conv=notrunc status=none
  rand_file "$MNT/u.bin" 50000 "$(($5 + 2))"
  sync
}

# On XFS, reflink mode: neither pair is read by the scan; FIDEDUPERANGE's compare shares
# the equal one and leaves the other, counted as differing, not as skipped.
pairs_on_xfs xfs e f 786432 5
before=$(checksums "$MNT")
"$BIN/oans-scan" --quiet --json --storage=hdd --whole-files-only "$MNT" -o "$WORK/x.idx" > "$WORK/x.json" 2>&1 \
  || fail "XFS scan: $(cat "$WORK/x.json")"
grep -q '"bytes_read":0,' "$WORK/x.json" && grep -q '"size_paired":4,' "$WORK/x.json" \
  || fail "XFS scan: $(cat "$WORK/x.json")"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/x.idx" -o "$WORK/x.plan" || fail "XFS plan"
"$BIN/oans-apply" --json "$WORK/x.plan" > "$WORK/x-apply.json" 2> "$WORK/x-apply.err" \
  || fail "XFS apply: $(cat "$WORK/x-apply.err")"
python3 - "$WORK/x-apply.json" <<'PY' || fail "XFS apply summary: $(cat "$WORK/x-apply.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["bytes_deduped"] == 1048576 and s["bytes_differed"] == 786432, s
assert s["bytes_skipped"] == 0 and s["errors"] == 0, s
PY
[ "$before" = "$(checksums "$MNT")" ] || fail "XFS contents changed"
pass "XFS: the equal pair by size shared, the other left as it was, neither read by the scan"

# --pair-by-size=always pairs files outside whole files only too, in a first scan: it
# reads the unique size, maps the pairs and says so; apply shares the equal pair and
# leaves the other. The next scan, with --previous, pairs nothing: it reads both pairs,
# and the partial duplicate in the pair that differs is then planned and shared.
pairs_on_xfs xfs-pairs p v 1000000 8
sleep 1.1  # settled: the next scan reuses u.bin's record
before=$(checksums "$MNT")
pair_scan() {  # pair_scan NAME ARGS...: a scan's summary in NAME.json, its messages in NAME.err
  "$BIN/oans-scan" --json "${@:2}" "$MNT" -o "$WORK/$1.idx" > "$WORK/$1.json" 2> "$WORK/$1.err" \
    || fail "scan $1: $(cat "$WORK/$1.err")"
}
pair_scan p1 --storage=hdd --pair-by-size=always
python3 - "$WORK/p1.json" <<'PY' || fail "hdd scan: $(cat "$WORK/p1.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["size_paired"] == 4 and s["hashed"] == 1 and s["bytes_read"] == 50000 and s["unread"] == 0, s
PY
grep -q "4 files (.*) share their size with exactly one other" "$WORK/p1.err" \
  || fail "the pairs were not told: $(cat "$WORK/p1.err")"
"$BIN/oans-plan" --quiet "$WORK/p1.idx" -o "$WORK/p1.plan" || fail "plan of the pairs"
"$BIN/oans-apply" --json "$WORK/p1.plan" > "$WORK/p1-apply.json" 2> "$WORK/p1-apply.err" \
  || fail "apply of the pairs: $(cat "$WORK/p1-apply.err")"
python3 - "$WORK/p1-apply.json" <<'PY' || fail "apply of the pairs: $(cat "$WORK/p1-apply.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["bytes_deduped"] == 1048576 and s["bytes_differed"] == 1000000 and s["errors"] == 0, s
PY
sleep 1.1  # the files settled (a record made within a second of a change is not reused)
pair_scan p2 --storage=hdd --pair-by-size=always --previous "$WORK/p1.idx"
python3 - "$WORK/p2.json" <<'PY' || fail "next scan: $(cat "$WORK/p2.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["size_paired"] == 0 and s["hashed"] == 4 and s["bytes_read"] == 2 * 1048576 + 2 * 1000000, s
PY
"$BIN/oans-plan" --quiet "$WORK/p2.idx" -o "$WORK/p2.plan" || fail "plan of the read pairs"
"$BIN/oans-apply" --json "$WORK/p2.plan" > "$WORK/p2-apply.json" 2> "$WORK/p2-apply.err" \
  || fail "apply of the read pairs: $(cat "$WORK/p2-apply.err")"
python3 - "$WORK/p2-apply.json" <<'PY' || fail "apply of the read pairs: $(cat "$WORK/p2-apply.json")"
import json, sys
s = json.load(open(sys.argv[1]))
# v1 and v2 share their first 244 blocks of 4 KiB; p1 and p2 were shared the night before.
assert s["bytes_deduped"] == 244 * 4096 and s["errors"] == 0, s
PY
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pair_scan p3 --storage=hdd
pair_scan p4 --storage=hdd --whole-files-only --pair-by-size=never
grep -q '"size_paired":0,' "$WORK/p3.json" && grep -q '"size_paired":0,' "$WORK/p4.json" \
  || fail "pairs made by default outside whole files only, or with never: $(cat "$WORK/p3.json" "$WORK/p4.json")"
pass "--pair-by-size=always maps pairs in every mode; the next scan reads them and their partial duplicate is shared"

# On btrfs with --read-data the same; a later scan following btrfs changes does not carry
# an unread record as it was: it walks and reads the file.
mkfs_mount btrfs 256M btrfs
rand_file "$MNT/one.bin" 70000 1
rand_file "$MNT/a.bin" 90000 2
cp -a "$MNT/a.bin" "$MNT/b.bin"
sync
"$BIN/oans-scan" --quiet --json --read-data --whole-files-only "$MNT" -o "$WORK/b1.idx" > "$WORK/b1.json" 2>&1 \
  || fail "btrfs scan: $(cat "$WORK/b1.json")"
grep -q '"unread":1,' "$WORK/b1.json" || fail "btrfs scan: $(cat "$WORK/b1.json")"
"$BIN/oans-scan" --quiet --json --read-data --previous "$WORK/b1.idx" "$MNT" -o "$WORK/b2.idx" > "$WORK/b2.json" 2>&1 \
  || fail "btrfs later scan: $(cat "$WORK/b2.json")"
grep -q '"not_followed":"unread_record"' "$WORK/b2.json" || fail "followed over an unread record: $(cat "$WORK/b2.json")"
"$BIN/oans-plan" --json "$WORK/b2.idx" -o /dev/null > "$WORK/b2-plan.json" 2>&1 || fail "plan of the later btrfs index"
grep -q '"skipped_unread":0' "$WORK/b2-plan.json" || fail "unread record carried: $(cat "$WORK/b2-plan.json")"
pass "a scan following btrfs changes walks over an unread record and reads the file"
