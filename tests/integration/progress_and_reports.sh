#!/usr/bin/env bash
# Progress under a pseudo-terminal for every tool, JSON progress and reports checked by a
# JSON parser, and fdupes/jdupes duplicate lists as planning input.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v script >/dev/null || { echo "SKIP: script(1) not installed"; exit 77; }
mkfs_mount btrfs 512M
tree_and_copy

# Under a terminal (script gives the tools a pty) progress shows bytes, percent and ETA.
script -qec "$BIN/oans-scan -o $WORK/idx $MNT" /dev/null > "$WORK/scan.tty"
grep -q "oans-scan: storage: ssd\|oans-scan: storage: hdd" "$WORK/scan.tty" || fail "scan does not show the storage kind"
grep -aq "oans-scan hash: .*%.*ETA" "$WORK/scan.tty" || fail "no scan progress on a terminal: $(cat -v "$WORK/scan.tty")"
script -qec "$BIN/oans-plan -o $WORK/plan $WORK/idx" /dev/null > "$WORK/plan.tty"
grep -aq "oans-plan load: " "$WORK/plan.tty" || fail "no plan progress on a terminal: $(cat -v "$WORK/plan.tty")"
script -qec "$BIN/oans-apply --no-journal $WORK/plan" /dev/null > "$WORK/apply.tty"
grep -aq "oans-apply dedupe: .*%.*ETA" "$WORK/apply.tty" || fail "no apply progress on a terminal: $(cat -v "$WORK/apply.tty")"
pass "scan, plan and apply show progress on a terminal"

# The walk's progress has a percentage and an ETA against an estimate (the filesystem's
# used space on a first scan), marked "~"; no line on a terminal shows "0 B / 0 B" or
# "ETA ?", and every summary line fits 80 columns and says how long the tool took. Many
# files, read from disk after the caches are dropped, keep the walk going long enough to
# report more than once.
python3 - "$MNT/many" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(5)
for i in range(60):
    os.makedirs(f"{d}/d{i}")
    for j in range(100):
        with open(f"{d}/d{i}/f{j}", "wb") as f:
            f.write(r.randbytes(32768))
PY
sync
before=$(checksums "$MNT")
echo 3 > /proc/sys/vm/drop_caches
# --read-data: the data is read, as where there are no btrfs checksums, so that the walk
# lasts long enough to show its estimated progress.
script -qec "$BIN/oans-scan --storage ssd --read-data -o $WORK/idx-many $MNT" /dev/null > "$WORK/walk.tty"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed by a scan"
python3 - "$WORK/walk.tty" "$WORK/scan.tty" "$WORK/plan.tty" "$WORK/apply.tty" <<'PY' || fail "progress lines: $(cat -v "$WORK/walk.tty")"
import re, sys
lines = []
for path in sys.argv[1:]:
    text = open(path, "rb").read().decode("utf-8", "replace").replace("\x1b[K", "")
    lines += [l for l in re.split(r"[\r\n]", text) if l.strip()]
walk = [l for l in lines if l.startswith("oans-scan walk: ")]
# The estimate is shown as one ("/ ~SIZE", "(~N.N%)"); once a rate is known (", N/s"),
# every line still below the estimate has an estimated ETA. (How many lines a walk
# prints before it passes the estimate depends on the machine's speed.)
assert any(re.search(r" / ~[\d.]+ \w?i?B.*\(~\d+\.\d%\)", l) for l in walk), ("no walk line with an estimated %", walk)
for l in walk:
    if re.search(r"\(~\d+\.\d%\)", l) and re.search(r"B/s", l):
        assert re.search(r"ETA ~\d", l), ("an estimated % with a rate but no estimated ETA", l)
bad = [l for l in lines if "0 B / 0 B" in l or "ETA ?" in l]
assert not bad, bad
progress = re.compile(r"^oans-\w+ \w+: ")
summary = [l for l in lines if not progress.match(l) and not l.startswith("oans-scan: storage")]
long_lines = [l for l in summary if len(l) > 80]
assert not long_lines, long_lines
for tool in ("oans-scan: found ", "oans-plan: found ", "oans-apply: done "):
    assert any(l.startswith(tool) and re.search(r" in \d+(\.\d)?s$", l) for l in summary), (tool, summary)
assert any(l.startswith("  skipped ") for l in summary), summary
PY
pass "the walk shows an estimated percentage and ETA; no 0 B / 0 B or ETA ?; summaries fit 80 columns"
rm -rf "$MNT/many"

# Without a terminal: no progress unless asked.
"$BIN/oans-scan" -o "$WORK/idx2" "$MNT" 2> "$WORK/scan.err"
grep -q "ETA" "$WORK/scan.err" && fail "progress printed to a non-terminal"
"$BIN/oans-scan" --progress=json -o "$WORK/idx3" "$MNT" 2> "$WORK/scan.json"
python3 - "$WORK/scan.json" <<'PY' || fail "bad JSON progress: $(cat "$WORK/scan.json")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
prog = [o for o in objs if "phase" in o]
assert prog and prog[-1]["done_bytes"] == prog[-1]["total_bytes"] > 0, prog[-1:]
assert any("notice" in o and "storage" in o["notice"] for o in objs)
PY
pass "--progress=json emits parseable progress; none on a pipe by default"

# Reports.
"$BIN/oans-plan" --format json "$WORK/idx" > "$WORK/groups.json"
python3 - "$WORK/groups.json" <<'PY' || fail "bad JSON report"
import json, sys
groups = [json.loads(l) for l in open(sys.argv[1])]
assert groups and all(len(g["files"]) >= 2 and g["size"] > 0 for g in groups)
assert all(sum(1 for f in g["files"] if f.get("source")) == 1 for g in groups)
PY
"$BIN/oans-plan" --format text "$WORK/idx" > "$WORK/groups.txt"
grep -q "(source)" "$WORK/groups.txt" || fail "text report"
"$BIN/oans-plan" --format fdupes "$WORK/idx" > "$WORK/list.txt"
grep -q "^$" "$WORK/list.txt" || fail "fdupes report has no group separator"
pass "reports in text, json and fdupes formats"

# An fdupes-style list as input: the groups are deduped through the kernel compare.
rm -rf "$MNT/copy"
cp -a --reflink=never "$MNT/orig" "$MNT/copy"
sync
before=$(checksums "$MNT")
# A hardlink listed beside its file (fdupes -H does that) is one file, never paired with itself.
printf '%s\n%s\n%s\n\n' "$MNT/orig/src/file1.bin" "$MNT/orig/src/file1.hardlink" "$MNT/copy/src/file1.bin" \
  >> "$WORK/list.txt"
"$BIN/oans-plan" --stats --from-list "$WORK/list.txt" -o "$WORK/list.plan" 2> "$WORK/list.err"
grep -q "file1.hardlink: skipped, the same file as a path listed before" "$WORK/list.err" || fail "hardlink in a list: $(cat "$WORK/list.err")"
"$BIN/oans-apply" --quiet "$WORK/list.plan"
sync
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy/src" 4096)" ] || fail "list groups not deduped"
pass "an fdupes list is planned and applied"
