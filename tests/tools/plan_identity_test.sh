#!/usr/bin/env bash
# Files are identified by (filesystem UUID, subvolume, inode), never by device number:
# two indexes of one tree whose records carry different `dev` values (as btrfs gives
# after a remount, here oans-gen-index --dev) hold the same files:
#   - planned together, every file of the second is a duplicate inode: the plan's rounds
#     are those of the first index alone;
#   - `--since` the first, nothing in the second is new: an empty plan;
#   - oans-diff sees every file unchanged.
# Usage: plan_identity_test.sh BIN_DIR (with oans-gen-index, oans-plan, oans-cat, oans-diff).
set -euo pipefail
BIN=$(cd "$1" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*"; exit 1; }

N=20000
args=(-q --files "$N" --seed 31 --max-inline 0 --max-blocks 64 --dup-ratio 0.2 --shared-ratio 0.2 --partial-ratio 0.1)
"$BIN/oans-gen-index" "${args[@]}" -o before.idx
"$BIN/oans-gen-index" "${args[@]}" --dev 61 -o after.idx
cmp -s before.idx after.idx && fail "--dev 61 wrote the same index"
"$BIN/oans-cat" after.idx >after.jsonl
grep -q '"dev":61' after.jsonl || fail "after.idx holds no record with dev 61"

# 1. Merged: the second index's files are the first's.
"$BIN/oans-plan" --json -o alone.plan before.idx >alone.json
"$BIN/oans-plan" --json -o both.plan before.idx after.idx >both.json
python3 - <<'PY'
import json, sys
alone = json.loads(open("alone.json").read().strip().splitlines()[-1])
both = json.loads(open("both.json").read().strip().splitlines()[-1])
if both["files"] != alone["files"] or both["filesystems"] != 1:
    print(f"FAIL: merged {both['files']} files on {both['filesystems']} filesystems; alone {alone['files']} on 1")
    sys.exit(1)
for k in ("groups", "planned_bytes", "operations", "rounds"):
    if both[k] != alone[k]:
        print(f"FAIL: merged {k} = {both[k]}, the first index alone {alone[k]}")
        sys.exit(1)
PY
# Rounds (files, operations) identical; only the header (indexes, command line) differs.
cmp -s <("$BIN/oans-cat" alone.plan | tail -n +2) <("$BIN/oans-cat" both.plan | tail -n +2) ||
  fail "the merged plan's rounds differ from the first index's"
echo "ok: merged, the second index adds no file"

# 2. --since: nothing new.
"$BIN/oans-plan" --json --since before.idx -o since.plan after.idx >since.json
python3 - <<'PY'
import json, sys
s = json.loads(open("since.json").read().strip().splitlines()[-1])
if s["groups"] or s["planned_bytes"] or s["rounds"]:
    print(f"FAIL: --since planned {s}")
    sys.exit(1)
PY
echo "ok: --since sees nothing new"

# 3. oans-diff: nothing changed.
"$BIN/oans-diff" --json before.idx after.idx >diff.jsonl 2>diff-summary.json
python3 - "$N" <<'PY'
import json, sys
lines = [json.loads(l) for l in open("diff.jsonl")]
s = json.loads(open("diff-summary.json").read())
if len(lines) != 0 or s != {"added": 0, "removed": 0, "changed": 0, "renamed": 0, "unchanged": int(sys.argv[1])}:
    print(f"FAIL: oans-diff reported {lines[:3]} ... {s}")
    sys.exit(1)
PY
echo "ok: oans-diff sees nothing changed"
echo "PASS"
