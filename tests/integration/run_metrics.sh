#!/usr/bin/env bash
# oans run --metrics-file: the Prometheus text file for node_exporter's textfile
# collector, parsed by the Prometheus client library itself. Two runs: each file's
# figures are those of its run's record (run-N.json), the totals add up over the runs,
# skips are counted by reason. The file is replaced whole, mode 0644; never written
# through a symlink; left alone by a run refused for the lock; a refused run says exit 2
# and keeps the totals.
source "$(dirname "$0")/lib.sh"
it_init "$1"
# Debian's python3-prometheus-client is in the system's python3, which may not be first
# on PATH.
pyprom=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import prometheus_client' 2>/dev/null; then pyprom=$p; break; fi
done
[ -n "$pyprom" ] || { echo "SKIP: python3-prometheus-client not installed (run scripts/install-deps)"; exit 77; }
mkfs_mount btrfs 256M
mkdir "$MNT/orig"
for i in 1 2 3 4; do rand_file "$MNT/orig/f$i.bin" $((i * 300000)) "$i"; done
cp -a --reflink=never "$MNT/orig" "$MNT/copy"
sync
before=$(checksums "$MNT")
export OANS_STATE_BASE=$WORK/state
prom=$WORK/prom
mkdir "$prom"

# check_metrics FILE RECORD [PREVIOUS_TOTAL]: the file's samples against the record.
check_metrics() {
  "$pyprom" - "$@" <<'PY'
import json, os, stat, sys
from datetime import datetime
from prometheus_client.parser import text_string_to_metric_families
path, record = sys.argv[1], json.load(open(sys.argv[2]))
previous = int(sys.argv[3]) if len(sys.argv) > 3 else 0
st = os.lstat(path)
assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)
fams = {f.name: f for f in text_string_to_metric_families(open(path).read())}
samples = [s for f in fams.values() for s in f.samples]
def one(name, **labels):
    got = [s for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(got) == 1, (name, labels, got)
    assert got[0].labels["state_dir"] == os.path.dirname(sys.argv[2]), got[0].labels
    return got[0].value
t = lambda key: datetime.strptime(record[key], "%Y-%m-%dT%H:%M:%S%z").timestamp()
assert one("oans_last_run_exit_code") == record["exit_code"]
assert one("oans_last_run_generation") == record["generation"]
assert one("oans_last_run_start_timestamp_seconds") == t("started")
assert one("oans_last_run_duration_seconds") == t("ended") - t("started")
assert t("ended") <= one("oans_last_run_timestamp_seconds") < t("ended") + 60
for step in record["steps"]:
    assert one("oans_last_run_step_duration_seconds", step=step["tool"]) == step["seconds"], step
    assert one("oans_last_run_step_exit_code", step=step["tool"]) == step["exit_code"], step
for key in ("files_scanned", "files_read", "bytes_planned", "bytes_deduped", "bytes_skipped"):
    assert one("oans_last_run_" + key) == record[key], key
skips = {s.labels["reason"]: s.value for s in fams["oans_last_run_skipped_bytes"].samples}
assert skips == record["skipped"], (skips, record["skipped"])
# Counters: the client names the family without _total.
assert fams["oans_deduped_bytes"].type == "counter"
assert one("oans_deduped_bytes_total") == previous + record["bytes_deduped"] == record["bytes_deduped_total"]
print(int(one("oans_deduped_bytes_total")))
PY
}

# Run 1: the copies are shared.
"$BIN/oans" run --quiet --metrics-file "$prom/oans.prom" "$MNT" || fail "run 1: exit $?"
state=$(ls -d "$OANS_STATE_BASE"/*/)
state=${state%/}
cat "$prom/oans.prom"
total1=$(check_metrics "$prom/oans.prom" "$state/run-000001.json") || fail "run 1's metrics"
[ "$total1" -ge $((10 * 300000)) ] || fail "run 1 deduped $total1 bytes"
[ "$(ls -A "$prom")" = oans.prom ] || fail "a temporary file was left: $(ls -A "$prom")"
pass "run 1: metrics parsed, as in its record (deduped $total1 bytes)"

# Run 2: a new copy, and one immutable copy the apply must skip (exit 1).
cp --reflink=never "$MNT/orig/f4.bin" "$MNT/again.bin"
cp --reflink=never "$MNT/orig/f3.bin" "$MNT/fixed.bin"
chattr +i "$MNT/fixed.bin"
sync
before=$(checksums "$MNT")
set +e
"$BIN/oans" run --quiet --metrics-file "$prom/oans.prom" 2> "$WORK/run2.err"
rc=$?
set -e
chattr -i "$MNT/fixed.bin"
cat "$WORK/run2.err"
[ $rc = 1 ] || fail "run 2 with an immutable copy: exit $rc, expected 1"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in run 2"
cat "$prom/oans.prom"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["skipped"] and r["bytes_deduped"] > 0, r' \
  "$state/run-000002.json" || fail "run 2 skipped nothing: $(cat "$state/run-000002.json")"
total2=$(check_metrics "$prom/oans.prom" "$state/run-000002.json" "$total1") || fail "run 2's metrics"
pass "run 2: skips by reason, total $total2 = $total1 + run 2's"

# Another run holds the lock: refused with exit 4, the file left as it was.
cp -p "$prom/oans.prom" "$WORK/kept.prom"
exec 9< "$state/lock"
flock -n 9 || fail "could not take the lock"
set +e
"$BIN/oans" run --metrics-file "$prom/oans.prom" 2> "$WORK/busy.err"
rc=$?
set -e
exec 9<&-
[ $rc = 4 ] || fail "run during a held lock: exit $rc: $(cat "$WORK/busy.err")"
cmp -s "$prom/oans.prom" "$WORK/kept.prom" || fail "a run refused for the lock rewrote the metrics"
pass "a run refused for the lock left the metrics file alone"
# With --wait-lock (as the units run), the run waits for the holder and then runs.
flock "$state/lock" sh -c "sleep 3; touch '$WORK/released'" &
holder=$!
for _ in $(seq 100); do
  if ! flock -n "$state/lock" true; then break; fi
  sleep 0.1
done
"$BIN/oans" run --wait-lock 10m --metrics-file "$prom/oans.prom" 2> "$WORK/wait.err" \
  || fail "run with --wait-lock: exit $?: $(cat "$WORK/wait.err")"
cat "$WORK/wait.err"
grep -q "waiting for it up to 600 s (--wait-lock)" "$WORK/wait.err" || fail "the run did not wait"
[ -e "$WORK/released" ] || fail "the run went on while the lock was held"
wait $holder
[ -e "$state/run-000003.json" ] || fail "no generation 3 after the wait"
total3=$(check_metrics "$prom/oans.prom" "$state/run-000003.json" "$total2") || fail "run 3's metrics"
pass "--wait-lock: waited for the holder, then ran generation 3"

# A run refused for its configuration: exit 2 in the file, the totals kept.
cp -p "$state/run.conf" "$WORK/run.conf"
echo "no such line" >> "$state/run.conf"
set +e
"$BIN/oans" run --metrics-file "$prom/oans.prom" 2> "$WORK/bad.err"
rc=$?
set -e
cp -p "$WORK/run.conf" "$state/run.conf"
[ $rc = 2 ] || fail "run with a bad run.conf: exit $rc"
"$pyprom" - "$prom/oans.prom" "$total3" <<'PY' || fail "refused run's metrics: $(cat "$prom/oans.prom")"
import sys
from prometheus_client.parser import text_string_to_metric_families
v = {s.name: s.value for f in text_string_to_metric_families(open(sys.argv[1]).read()) for s in f.samples}
assert v["oans_last_run_exit_code"] == 2 and v["oans_deduped_bytes_total"] == int(sys.argv[2]), v
assert "oans_last_run_generation" not in v, v
PY
pass "a refused run: exit 2 in the metrics, totals kept"

# Never through a symlink: the link and its target are left as they were.
echo "not metrics" > "$WORK/victim"
ln -s "$WORK/victim" "$prom/link.prom"
set +e
"$BIN/oans" run --quiet --metrics-file "$prom/link.prom" 2> "$WORK/link.err"
rc=$?
set -e
cat "$WORK/link.err"
[ $rc = 2 ] || fail "metrics file through a symlink: exit $rc, expected 2"
grep -q "link.prom is a symbolic link" "$WORK/link.err" || fail "no clear message"
[ "$(cat "$WORK/victim")" = "not metrics" ] && [ -L "$prom/link.prom" ] || fail "the symlink or its target was changed"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "a symlink at the metrics file's name refused, its target untouched"
