#!/usr/bin/env bash
# Where --json puts the summary, the same rule in every tool (docs/format.md, "Summaries").
# Standard output is the data stream: the summary goes there, as its one line. When
# standard output carries the tool's output (an index, a plan, a report, dry-run or diff
# lines), the summary goes to stderr, and standard output holds that output alone.
# Also: the human summary says what the JSON says, and --summary-file holds that line.
# Usage: json_stream_test.sh BIN_DIR (with oans-scan, oans-plan, oans-apply, oans-cat, oans-diff).
set -euo pipefail
BIN=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
chmod 700 .
mkdir -p t/a t/b
for i in 1 2 3 4; do head -c $((i * 20000)) /dev/urandom > "t/a/f$i"; done
cp -p t/a/* t/b/

# one_json FILE: FILE is exactly one line, a JSON object; prints its keys.
one_json() {
  python3 -c 'import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
print(" ".join(json.loads(lines[0])))' "$1" || fail "$1 is not one JSON line: $(cat "$1")"
}
# no_json FILE: no line of FILE is a JSON object.
no_json() { ! grep -q '^{' "$1" || fail "$1 holds JSON: $(cat "$1")"; }
# field FILE KEY: KEY of the last JSON line of FILE.
field() {
  python3 -c 'import json, sys
print(json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])[sys.argv[2]])' "$1" "$2"
}

# oans-scan: with -o, on stdout; without, on stderr, and stdout is the index.
"$BIN/oans-scan" --json --progress none -o i.idx t > scan.out 2> scan.err
one_json scan.out > /dev/null
no_json scan.err
"$BIN/oans-scan" --json --progress none t > piped.idx 2> piped.err
"$BIN/oans-cat" piped.idx > /dev/null || fail "oans-scan's stdout is no index with --json"
[ "$(field piped.err files)" = 8 ] || fail "scan: files $(field piped.err files), expected 8"
# The human summary says the same as the JSON, and --summary-file holds its line.
"$BIN/oans-scan" --progress none --summary-file scan.sum -o i.idx t 2> scan.txt
grep -q "^oans-scan: found 8 files (.*) in 3 directories in " scan.txt ||
  fail "scan's summary: $(cat scan.txt)"
[ "$(one_json scan.sum)" = "$(one_json scan.out)" ] || fail "--summary-file and --json differ"
echo "ok: oans-scan"

# oans-plan: the same rule, for a plan and for a report.
"$BIN/oans-plan" --json --progress none -o p.plan i.idx > plan.out 2> plan.err
one_json plan.out > /dev/null
no_json plan.err
"$BIN/oans-plan" --json --progress none i.idx > piped.plan 2> piped-plan.err
"$BIN/oans-cat" piped.plan > /dev/null || fail "oans-plan's stdout is no plan with --json"
"$BIN/oans-plan" --json --progress none --format json i.idx > report.out 2> report.err
python3 -c 'import json, sys
for l in open(sys.argv[1]):
    assert set(json.loads(l)) == {"size", "files"}, l' report.out || fail "report: $(cat report.out)"
[ "$(field report.err groups)" = 4 ] || fail "plan: $(field report.err groups) groups, expected 4"
"$BIN/oans-plan" --progress none -o p.plan i.idx 2> plan.txt
grep -q "^oans-plan: found 8 files on 1 filesystems in " plan.txt || fail "plan's summary: $(cat plan.txt)"
grep -q "4 duplicate groups" plan.txt || fail "plan's summary has not the JSON's groups: $(cat plan.txt)"
echo "ok: oans-plan"

# oans-diff: the changes on stdout, the summary on stderr.
echo new > t/new
"$BIN/oans-scan" --progress none -o j.idx t 2> /dev/null
rm t/new
"$BIN/oans-diff" --json i.idx j.idx > diff.out 2> diff.err
one_json diff.err > /dev/null
[ "$(field diff.err added)" = 1 ] || fail "diff: $(cat diff.err)"
python3 -c 'import json, sys
for l in open(sys.argv[1]):
    assert "change" in json.loads(l), l' diff.out || fail "diff's stdout: $(cat diff.out)"
"$BIN/oans-diff" i.idx j.idx > /dev/null 2> diff.txt
grep -q "^oans-diff: 1 added, 0 removed, 0 changed, 0 renamed, 8 unchanged$" diff.txt || fail "diff's summary: $(cat diff.txt)"
echo "ok: oans-diff"
# oans-apply: on stdout, but with --dry-run, whose lines are on stdout.
"$BIN/oans-apply" --link=hard --dry-run --json p.plan > dry.out 2> dry.err
[ "$(grep -c '"round"' dry.out)" -ge 1 ] || fail "no dry-run lines: $(cat dry.out)"
grep -v '"round"' dry.out | grep -q . && fail "dry run's stdout holds more than its lines: $(cat dry.out)"
[ "$(field dry.err dry_run)" = True ] || fail "dry run: $(cat dry.err)"
"$BIN/oans-apply" --link=hard --journal p.journal --json p.plan > apply.out 2> apply.err
one_json apply.out > /dev/null
[ "$(field apply.out files_linked)" = 4 ] || fail "apply: $(cat apply.out apply.err)"
[ "$(stat -c %h t/a/f1)" = 2 ] || fail "apply linked nothing"
echo "ok: oans-apply"

echo "PASS"
