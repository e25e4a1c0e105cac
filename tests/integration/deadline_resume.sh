#!/usr/bin/env bash
# A maintenance window: apply stopped by --deadline half way exits 3 and keeps a journal;
# the next run of the same plan resumes, every round is done exactly once, and the tree
# ends fully deduped with contents unchanged.
source "$(dirname "$0")/lib.sh"
it_init "$1"
plan_many_rounds

set +e
"$BIN/oans-apply" --json --deadline 2s --max-rate 4M "$WORK/plan" > "$WORK/run1.json" 2> "$WORK/run1.err"
rc=$?
set -e
cat "$WORK/run1.err"
[ $rc = 3 ] || fail "expected exit 3 (stopped early), got $rc"
done1=$(python3 -c "import json; print(json.load(open('$WORK/run1.json'))['rounds_done'])")
[ "$done1" -gt 0 ] && [ "$done1" -lt "$rounds" ] || fail "first run did $done1 of $rounds rounds"
pass "deadline stopped apply after $done1 of $rounds rounds (exit 3)"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"

"$BIN/oans-apply" --json "$WORK/plan" > "$WORK/run2.json" 2> "$WORK/run2.err"
cat "$WORK/run2.err"
python3 - "$WORK/run2.json" "$done1" "$rounds" <<'PY' || fail "second run: $(cat "$WORK/run2.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rounds_from_journal"] == int(sys.argv[2]), s
assert s["rounds_done"] + s["rounds_from_journal"] == int(sys.argv[3]), s
PY
python3 - "$WORK/plan.journal" "$rounds" <<'PY' || fail "journal: $(cat "$WORK/plan.journal")"
import sys
lines = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
done = [int(l[1]) for l in lines]
assert sorted(done) == list(range(int(sys.argv[2]))), done   # every round exactly once
PY
pass "second run resumed from the journal; every round done exactly once"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "tree not fully deduped"
pass "tree fully deduped, contents unchanged"

"$BIN/oans-apply" --json "$WORK/plan" > "$WORK/run3.json" 2>/dev/null
python3 -c "import json,sys; s=json.load(open('$WORK/run3.json')); sys.exit(0 if s['rounds_done']==0 and s['rounds_from_journal']==$rounds else 1)" \
  || fail "third run redid work: $(cat "$WORK/run3.json")"
pass "a third run finds everything done"
