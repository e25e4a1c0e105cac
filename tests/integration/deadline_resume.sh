#!/usr/bin/env bash
# A maintenance window: apply stopped by --deadline half way exits 3 and keeps a journal;
# the next run of the same plan resumes, every round is done exactly once, and the tree
# ends fully deduped with contents unchanged.
source "$(dirname "$0")/lib.sh"
it_init "$1"
plan_many_rounds

stop_then_resume
pass "deadline stopped apply after $done1 of $rounds rounds (exit 3)"
pass "second run resumed from the journal; every round done exactly once"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "tree not fully deduped"
pass "tree fully deduped, contents unchanged"

"$BIN/oans-apply" --json "$WORK/plan" > "$WORK/run3.json" 2>/dev/null
python3 -c "import json,sys; s=json.load(open('$WORK/run3.json')); sys.exit(0 if s['rounds_done']==0 and s['rounds_from_journal']==$rounds else 1)" \
  || fail "third run redid work: $(cat "$WORK/run3.json")"
pass "a third run finds everything done"
