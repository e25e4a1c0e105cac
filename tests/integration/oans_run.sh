#!/usr/bin/env bash
# oans run: three generations in a state directory on another filesystem (cold, unchanged,
# after new copies), the later two with no arguments at all; the generations kept; a
# second run during the first refused with exit 4; state directories on the deduped
# filesystem or on tmpfs refused. Options: per-run ones (--plan-only, --until) never
# stored; stored ones given again without ROOT used for that run only; oans apply with
# --state-dir DIR and --until HH:MM; --show-config; an older run.conf with per-run lines
# read. Every file's content is checked before and after.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
tree_and_copy
before=$(checksums "$MNT")
export OANS_STATE_BASE=$WORK/state
gen_files() {  # the generation files in the state directory, journals left out
  (cd "$OANS_STATE_BASE"/*/ && for f in gen-* plan-*; do
    if [ -e "$f" ] && [[ $f != *journal* ]]; then printf '%s ' "$f"; fi
  done)
}

# Refused: a state directory on the filesystem being deduped, and one on tmpfs.
set +e
"$BIN/oans" run --state-dir "$MNT/oans-state" "$MNT" > /dev/null 2> "$WORK/on-root.err"
rc=$?
set -e
cat "$WORK/on-root.err"
[ $rc = 2 ] || fail "state directory on the deduped filesystem: exit $rc, expected 2"
grep -q "is on the filesystem of $MNT, which is being deduped" "$WORK/on-root.err" || fail "no clear message"
[ ! -e "$MNT/oans-state" ] || fail "the refused state directory was left on the deduped filesystem"
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
  shm=$(mktemp -d /dev/shm/oans-it.XXXXXX)
  set +e
  "$BIN/oans" run --state-dir "$shm/state" "$MNT" > /dev/null 2> "$WORK/tmpfs.err"
  rc=$?
  set -e
  rm -rf "$shm"
  cat "$WORK/tmpfs.err"
  [ $rc = 2 ] && grep -q "is on tmpfs" "$WORK/tmpfs.err" || fail "state directory on tmpfs: exit $rc"
  pass "state directories on the deduped filesystem and on tmpfs refused with a message"
fi
[ -z "$(ls -A "$OANS_STATE_BASE" 2>/dev/null)" ] || fail "a refused run left a state directory"

# Where the duplicates are: oans plan --format dirs and dirs-json on a scan of the tree.
"$BIN/oans" scan --quiet -o "$WORK/cold.idx" "$MNT"
"$BIN/oans" plan --quiet --format dirs --top 2 "$WORK/cold.idx" > "$WORK/dirs.txt"
cat "$WORK/dirs.txt"
[ "$(wc -l < "$WORK/dirs.txt")" = 2 ] || fail "--top 2 gave $(wc -l < "$WORK/dirs.txt") lines"
# The planner picks each group's source by disk position: the copies to reclaim are all on
# one side (then that side comes first) or on both (then $MNT does).
head -1 "$WORK/dirs.txt" | grep -q "  $MNT\(/copy\|/orig\)\?\$" || fail "the first directory is not the tree's"
"$BIN/oans" plan --quiet --format dirs-json "$WORK/cold.idx" > "$WORK/dirs.json"
python3 - "$WORK/dirs.json" "$MNT" <<'PY' || fail "dirs-json: $(cat "$WORK/dirs.json")"
import json, sys
mnt = sys.argv[2]
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[0]["path"] in (mnt, mnt + "/orig", mnt + "/copy"), rows[0]
assert all(r["path"].startswith(mnt) for r in rows), "a directory above the one holding every duplicate"
media = [r for r in rows if r["path"].endswith("/media")]
assert sum(r["duplicate_files"] for r in media) == 3, media   # big1, big2, sparse
assert sum(r["reclaimable_bytes"] for r in media) == (8 << 20) + (3 << 20) + 12345 + (64 << 20), media
assert rows[0]["reclaimable_bytes"] >= (75 << 20) + 12345 + sum(i * 5000 for i in range(1, 41)), rows[0]
assert rows == sorted(rows, key=lambda r: (-r["reclaimable_bytes"], r["path"])), "not most first"
PY
pass "oans plan --format dirs: $(head -1 "$WORK/dirs.txt")"

# --plan-only (another state directory): scan and plan, nothing applied, the plan's path
# printed for a later oans apply. --plan-only is not stored; --max-rate and --same-owner are.
"$BIN/oans" run --quiet --plan-only --max-rate 200M --same-owner --state-dir "$WORK/plan-only" "$MNT" 2> "$WORK/plan-only.err" \
  || fail "plan-only run: $(cat "$WORK/plan-only.err")"
cat "$WORK/plan-only.err"
grep -q "apply it in the maintenance window with: oans apply $WORK/plan-only/plan-000001.capnp" \
  "$WORK/plan-only.err" || fail "the plan's path is not printed"
[ -n "$(unshared_files "$MNT/copy" 4096)" ] || fail "--plan-only applied the plan"
"$BIN/oans" apply --dry-run "$WORK/plan-only/plan-000001.capnp" | grep -q . || fail "the printed plan is empty"
grep -q "plan-only" "$WORK/plan-only/run.conf" && fail "--plan-only stored: $(cat "$WORK/plan-only/run.conf")"
grep -qx "apply 209715200" "$WORK/plan-only/run.conf" || fail "--max-rate not stored: $(cat "$WORK/plan-only/run.conf")"
grep -qx "plan --same-owner" "$WORK/plan-only/run.conf" || fail "--same-owner not stored: $(cat "$WORK/plan-only/run.conf")"
"$BIN/oans-cat" "$WORK/plan-only/plan-000001.capnp" > "$WORK/plan-only.cat"
head -1 "$WORK/plan-only.cat" | grep -q -- '"--same-owner"' || fail "the plan was not made with --same-owner"
OANS_STATE_DIR=$WORK/plan-only "$BIN/oans" apply --dry-run > "$WORK/newest.json" || fail "oans apply (newest plan)"
[ "$(wc -l < "$WORK/newest.json")" -gt 10 ] || fail "oans apply without a plan: $(cat "$WORK/newest.json")"
# --state-dir DIR, --until HH:MM with a space, and --max-rate again over the stored one.
soon=$(date -d '+2 hour' +%H:%M)
"$BIN/oans" apply --state-dir "$WORK/plan-only" --until "$soon" --max-rate 100M --dry-run > "$WORK/newest2.json" \
  2> "$WORK/newest2.err" || fail "oans apply --state-dir DIR --until $soon --max-rate 100M: $(cat "$WORK/newest2.err")"
cmp -s "$WORK/newest.json" "$WORK/newest2.json" || fail "oans apply --state-dir DIR: another plan"
set +e
"$BIN/oans" apply --state-dir "$WORK/plan-only" --dry-run "$WORK/plan-only/plan-000001.capnp" 2> "$WORK/both.err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "give PLAN or --state-dir, not both" "$WORK/both.err" || fail "PLAN with --state-dir: exit $rc"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in the plan-only run"
pass "--plan-only: planned, nothing applied, not stored; oans apply takes the newest plan (--state-dir DIR, --until HH:MM)"

# Run 1 (cold), slowed down by a read rate, with a second run (no arguments) during it.
# The tree settled first: run 2 reuses every record run 1 made.
settle
"$BIN/oans" run --keep 2 --max-rate 3M --exclude '*.txt' --scan-option=--json --plan-option=--json "$MNT" \
  > "$WORK/run1.out" 2> "$WORK/run1.err" &
run1=$!
for _ in $(seq 600); do  # up to 60 s on a loaded machine
  [ "$(cat "$OANS_STATE_BASE"/*/lock 2>/dev/null)" = "$run1" ] && break
  sleep 0.1
done
[ "$(cat "$OANS_STATE_BASE"/*/lock 2>/dev/null)" = "$run1" ] || fail "the first run did not take the lock"
set +e
start=$(date +%s)
"$BIN/oans" run > /dev/null 2> "$WORK/overlap.err"
rc=$?
took=$(( $(date +%s) - start ))
kill -0 $run1 2>/dev/null
still=$?
set -e
cat "$WORK/overlap.err"
# Refused at once, not after waiting for the lock: the first run still holds it. (No bound
# on the time taken: a loaded machine may take seconds to start a process.)
[ $still = 0 ] || fail "the first run ended before the second was refused (no overlap shown)"
[ $rc = 4 ] || fail "second run during the first: exit $rc, expected 4 (another run holds the lock)"
grep -q "another oans run (pid $run1) is using the state directory" "$WORK/overlap.err" || fail "no clear message"
pass "a second oans run during the first refused in ${took}s: $(cat "$WORK/overlap.err")"
# oans status during the run: its pid and step, from the lock and the run's record.
running_ok() {
  python3 - "$WORK/status-running.json" "$run1" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read())
r = s["running"]
assert r["pid"] == int(sys.argv[2]) and r.get("generation") == 1 and r["phase"] in ("scan", "plan", "apply"), r
g = s["generations"][-1]
assert g["generation"] == 1 and g["ended"] is None and g["exit_code"] is None, g
PY
}
for _ in $(seq 50); do   # the record is written just after the lock is taken
  "$BIN/oans" status --json > "$WORK/status-running.json" || fail "oans status during run 1: exit $?"
  running_ok 2> /dev/null && break
  sleep 0.1
done
"$BIN/oans" status
running_ok || fail "oans status during run 1: $(cat "$WORK/status-running.json")"
pass "oans status shows run 1 in progress: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['running'])" "$WORK/status-running.json")"
wait $run1 || fail "run 1: exit $?: $(cat "$WORK/run1.err")"
cat "$WORK/run1.err"
state=$(ls -d "$OANS_STATE_BASE"/*/)
[ "$(stat -c %a "$state")" = 700 ] || fail "state directory mode $(stat -c %a "$state")"
grep -qx "root $MNT" "$state/run.conf" || fail "roots not stored: $(cat "$state/run.conf")"
[ "$(gen_files)" = "gen-000001.idx plan-000001.capnp " ] || fail "after run 1: $(gen_files)"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "run 1 did not dedupe the tree: $(unshared_files "$MNT/copy" 4096)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in run 1"
pass "run 1 (cold) deduped the tree; generation 1 in $state"

"$BIN/oans" run --show-config > "$WORK/show.txt" || fail "--show-config: exit $?"
cat "$WORK/show.txt"
python3 - "$WORK/show.txt" "$state" "$MNT" <<'PY' || fail "--show-config: $(cat "$WORK/show.txt")"
import sys
lines = open(sys.argv[1]).read().splitlines()
assert lines == ["state directory  " + sys.argv[2].rstrip("/"), "root             " + sys.argv[3], "keep             2",
                 "oans-scan        --exclude '*.txt' --json", "oans-plan        --json",
                 "oans-apply       --max-rate 3145728"], lines
PY
pass "--show-config prints the stored roots and options"

# Run 2: nothing changed; no arguments but --max-rate, for this run only (run.conf is
# unchanged). The previous index is reused: nothing is read.
cp "$state/run.conf" "$WORK/run.conf.before"
"$BIN/oans" run --max-rate 100M 2> "$WORK/run2.err" || fail "run 2: exit $?: $(cat "$WORK/run2.err")"
cmp -s "$state/run.conf" "$WORK/run.conf.before" || fail "run 2 changed run.conf: $(cat "$state/run.conf")"
cat "$WORK/run2.err"
# The summaries as JSON (--scan-option=--json --plan-option=--json, stored in run 1).
summary() { python3 -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('{') and sys.argv[2] in l: print(json.loads(l)[sys.argv[2]])" "$1" "$2"; }
[ "$(summary "$WORK/run2.err" bytes_read)" = 0 ] || fail "run 2 read data again"
[ "$(summary "$WORK/run2.err" reused)" -gt 50 ] || fail "run 2 did not reuse the previous index"
[ "$(summary "$WORK/run2.err" planned_bytes)" = 0 ] || fail "run 2 planned something"
# Run 1 was applied to the end (applied-000001): run 2 plans --since its index. (Its
# dedupe rewrote extents, so run 2's index is not the same as run 1's.)
[ -e "$state/applied-000001" ] || fail "run 1 not marked applied"
[ "$(gen_files)" = "gen-000001.idx gen-000002.idx plan-000001.capnp plan-000002.capnp " ] || fail "after run 2: $(gen_files)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in run 2"
pass "run 2 (unchanged, no arguments): nothing read, nothing planned"

# Run 3: new copies since; no arguments. They are deduped; generation 1 is removed.
cp --reflink=never "$MNT/orig/media/big1.bin" "$MNT/big1.again"
mkdir "$MNT/third"
cp -a --reflink=never "$MNT/orig/src/sub" "$MNT/third/sub"
echo "not excluded by *.txt? yes: excluded" > "$MNT/third/new.txt"
sync
[ -n "$(unshared_files "$MNT/third" 4096)" ] || fail "the new copies share data already"
before=$(checksums "$MNT")
"$BIN/oans" run --json > "$WORK/run3.json" 2> "$WORK/run3.err" || fail "run 3: exit $?: $(cat "$WORK/run3.err")"
cat "$WORK/run3.err"
[ "$(summary "$WORK/run3.err" planned_bytes)" -gt 0 ] || fail "run 3 planned nothing"
[ -z "$(unshared_files "$MNT/third" 4096)" ] || fail "run 3 left new copies: $(unshared_files "$MNT/third" 4096)"
[ -z "$(unshared_files "$MNT/big1.again" 4096)" ] || fail "run 3 left big1.again unshared"
[ "$(gen_files)" = "gen-000002.idx gen-000003.idx plan-000002.capnp plan-000003.capnp " ] || fail "after run 3: $(gen_files)"
grep -q "removed generation 1" "$WORK/run3.err" || fail "removal not reported"
# The records of the last nights: oans status --json, and for people.
"$BIN/oans" status --json --last 5 > "$WORK/status.json" || fail "oans status: exit $?"
"$BIN/oans" status > "$WORK/status.txt" || fail "oans status: exit $?"
cat "$WORK/status.txt"
python3 - "$WORK/status.json" "$MNT" <<'PY' || fail "oans status --json: $(cat "$WORK/status.json")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
s = json.loads(lines[0])
assert s["running"] is None and s["roots"] == [sys.argv[2]], s
assert s["next_run"] is None, s   # no timer of this state directory's name
gens = s["generations"]
assert [g["generation"] for g in gens] == [2, 3], gens   # generation 1 was removed with its record
for g in gens:
    assert g["exit_code"] == 0 and g["phase"] == "done" and g["ended"], g
    assert [(st["tool"], st["exit_code"]) for st in g["steps"]] == [("scan", 0), ("plan", 0), ("apply", 0)], g
    assert all(st["seconds"] is not None and st["summary"] for st in g["steps"]), g
    assert g["files_scanned"] > 100 and g["bytes_skipped"] == 0 and g["skipped"] == {}, g
assert gens[0]["bytes_planned"] == 0 and gens[0]["bytes_deduped"] == 0, gens[0]
assert gens[1]["bytes_planned"] > 0 and gens[1]["bytes_deduped"] == gens[1]["bytes_planned"], gens[1]
assert gens[1]["files_read"] >= 1, gens[1]
PY
python3 - "$WORK/status.json" "$state" <<'PY' || fail "oans status --json does not match the runs' records"
import json, sys
gens = json.loads(open(sys.argv[1]).read())["generations"]
records = [json.load(open(f"{sys.argv[2]}/run-{n:06d}.json")) for n in (2, 3)]
assert gens == records, (gens, records)   # what each of the last two runs recorded, unchanged
run3 = open(sys.argv[1].replace("status.json", "run3.json")).read().splitlines()
assert len(run3) == 1 and json.loads(run3[0]) == records[1], run3   # oans run --json: its record
PY
# The next start of the dataset's timer, as systemd tells it.
printf '#!/bin/sh\n[ "$*" = "show --property=NextElapseUSecRealtime --value -- oans@%s.timer" ] && echo "Fri 2026-12-04 01:30:00 UTC"\n' \
  "$(basename "$state")" > "$WORK/systemctl"
chmod +x "$WORK/systemctl"
OANS_SYSTEMCTL=$WORK/systemctl "$BIN/oans" status --json > "$WORK/status-timer.json"
OANS_SYSTEMCTL=$WORK/systemctl "$BIN/oans" status > "$WORK/status-timer.txt"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['next_run'] == 'Fri 2026-12-04 01:30:00 UTC'" \
  "$WORK/status-timer.json" || fail "oans status --json: no next run: $(cat "$WORK/status-timer.json")"
grep -q "^  next run: Fri 2026-12-04 01:30:00 UTC$" "$WORK/status-timer.txt" || fail "oans status: $(cat "$WORK/status-timer.txt")"
tr '\n' ' ' < "$WORK/status.txt" | grep -q "generation 3: .* exit 0: *scan .*(exit 0), plan .*(exit 0), apply .*(exit 0)" \
  || fail "oans status: $(cat "$WORK/status.txt")"
[ ! -e "$state/run-000001.json" ] && [ -e "$state/run-000003.json" ] || fail "records not kept with their generations"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in run 3"
"$BIN/oans" cat "$state/gen-000003.idx" | grep -q '"third/new.txt"\|third/new.txt' && fail "--exclude '*.txt' not replayed"
pass "run 3 (new copies, no arguments) deduped them; generations 2 and 3 kept (--keep 2 replayed)"

# SIGTERM to oans run during its apply: passed on once, the apply stops after its round,
# the run exits 3 and the generation is complete; the next run dedupes the rest.
for i in 1 2 3; do cp --reflink=never "$MNT/orig/media/big1.bin" "$MNT/third/big1.$i"; done
sync
before=$(checksums "$MNT")
"$BIN/oans" run 2> "$WORK/run4.err" &
run4=$!
for _ in $(seq 1200); do  # up to 60 s on a loaded machine
  [ "$(ps --ppid $run4 -o comm= 2>/dev/null)" = oans-apply ] && break
  sleep 0.05
done
[ "$(ps --ppid $run4 -o comm= 2>/dev/null)" = oans-apply ] || fail "no apply seen in run 4: $(cat "$WORK/run4.err")"
sleep 1
kill -TERM $run4
set +e
wait $run4
rc=$?
set -e
cat "$WORK/run4.err"
[ $rc = 3 ] || fail "oans run stopped by SIGTERM: exit $rc, expected 3"
grep -q "the apply stopped; run again to continue" "$WORK/run4.err" || fail "no stop reported"
python3 - "$state/run-000004.json" <<'PY' || fail "record of the stopped run: $(cat "$state/run-000004.json")"
import json, sys
g = json.load(open(sys.argv[1]))
assert g["exit_code"] == 3 and g["steps"][-1]["tool"] == "apply" and g["steps"][-1]["exit_code"] == 3, g
assert "stopped" in g["message"] and g["steps"][-1]["summary"]["interrupted"] is True, g
PY
[ -n "$(unshared_files "$MNT/third" 4096)" ] || fail "the stopped run deduped everything (stop came too late)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in the stopped run"
[ "$(gen_files)" = "gen-000003.idx gen-000004.idx plan-000003.capnp plan-000004.capnp " ] || fail "after run 4: $(gen_files)"
"$BIN/oans" run --quiet || fail "run 5: exit $?"
[ -z "$(unshared_files "$MNT/third" 4096)" ] || fail "run 5 left copies: $(unshared_files "$MNT/third" 4096)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in run 5"
pass "SIGTERM during the apply: exit 3, contents intact; the next run finished the job"

# --until given with ROOT is not stored: the next run without options does not fail on it
# a day later. (Another state directory: the generations above stay as they are.)
before=$(checksums "$MNT")
"$BIN/oans" run --quiet --until "$soon" --state-dir "$WORK/until" "$MNT" || fail "run with --until: exit $?"
grep -q -- "--until" "$WORK/until/run.conf" && fail "--until stored: $(cat "$WORK/until/run.conf")"
"$BIN/oans" run --quiet --keep 1 --state-dir "$WORK/until" || fail "the run after it: exit $?"
[ "$(cd "$WORK/until" && ls plan-*.capnp)" = plan-000002.capnp ] || fail "--keep 1 for that run: $(ls "$WORK/until")"
grep -qx "keep 3" "$WORK/until/run.conf" || fail "--keep without ROOT was stored: $(cat "$WORK/until/run.conf")"
# A run.conf written by an older version, with plan-only and --until stored: read, those
# lines ignored with a note, and the run applies.
printf 'oans-run 1\nkeep 3\nplan-only 1\nroot %s\napply --until\napply 13:32\n' "$MNT" > "$WORK/until/run.conf"
"$BIN/oans" run --state-dir "$WORK/until" 2> "$WORK/old-conf.err" || fail "older run.conf: exit $?: $(cat "$WORK/old-conf.err")"
cat "$WORK/old-conf.err"
grep -q "oans run: note: $WORK/until/run.conf: plan-only 1: ignored" "$WORK/old-conf.err" || fail "no note on plan-only"
grep -q "apply --until 13:32: ignored" "$WORK/old-conf.err" || fail "no note on --until"
grep -q "generation 3 in $WORK/until, applied" "$WORK/old-conf.err" || fail "the older run.conf's run did not apply"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in the --until runs"
pass "per-run options not stored; options without ROOT for one run; an older run.conf read with notes"
