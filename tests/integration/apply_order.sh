#!/usr/bin/env bash
# apply --order=none (rounds and read-ahead in a fixed shuffled order, for measuring what
# disk order is worth) stopped half way by a deadline and resumed in the same order ends
# where the plan's order ends: every round done exactly once, contents unchanged, every
# duplicate shared, and the same btrfs accounting as an apply in physical order.
source "$(dirname "$0")/lib.sh"
it_init "$1"
plan_many_rounds

# The same operations in both orders, in another sequence of rounds.
"$BIN/oans-apply" --dry-run "$WORK/plan" > "$WORK/dry.physical" 2>/dev/null
"$BIN/oans-apply" --dry-run --order=none "$WORK/plan" > "$WORK/dry.none" 2>/dev/null
[ -s "$WORK/dry.physical" ] || fail "dry run printed nothing"
[ "$(sort "$WORK/dry.physical")" = "$(sort "$WORK/dry.none")" ] || fail "--order=none plans other operations"
! cmp -s "$WORK/dry.physical" "$WORK/dry.none" || fail "--order=none kept the plan's order"
"$BIN/oans-apply" --dry-run --order=none "$WORK/plan" 2>/dev/null | cmp -s - "$WORK/dry.none" \
  || fail "--order=none is not the same order on every run"
pass "dry runs: the same operations, in a shuffled order that repeats"

set +e
"$BIN/oans-apply" --json --order=none --deadline 2s --max-rate 4M "$WORK/plan" > "$WORK/run1.json" 2> "$WORK/run1.err"
rc=$?
set -e
cat "$WORK/run1.err"
[ $rc = 3 ] || fail "expected exit 3 (stopped early), got $rc"
done1=$(python3 -c "import json; print(json.load(open('$WORK/run1.json'))['rounds_done'])")
[ "$done1" -gt 0 ] && [ "$done1" -lt "$rounds" ] || fail "first run did $done1 of $rounds rounds"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
"$BIN/oans-apply" --json --order=none "$WORK/plan" > "$WORK/run2.json" 2> "$WORK/run2.err"
cat "$WORK/run2.err"
python3 - "$WORK/run2.json" "$done1" "$rounds" <<'PY' || fail "second run: $(cat "$WORK/run2.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rounds_from_journal"] == int(sys.argv[2]), s
assert s["rounds_done"] + s["rounds_from_journal"] == int(sys.argv[3]), s
assert s["bytes_skipped"] == 0 and s["errors"] == 0, s
PY
python3 - "$WORK/plan.journal" "$rounds" <<'PY' || fail "journal: $(cat "$WORK/plan.journal")"
import sys
lines = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
done = [int(l[1]) for l in lines]
n = int(sys.argv[2])
assert sorted(done) == list(range(n)), done   # every round exactly once
assert done != list(range(n)), done           # and not in the plan's order
PY
pass "stopped after $done1 of $rounds shuffled rounds, resumed; every round done exactly once"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "tree not fully deduped"
shuffled_du="$(total_bytes "$MNT") $(exclusive_bytes "$MNT")"
pass "order none: contents unchanged, fully shared ($shuffled_du total/exclusive)"

# The same tree again, unshared, applied in the plan's order.
rm -rf "$MNT/copy" "$WORK/idx" "$WORK/plan" "$WORK/plan.journal"
cp -a --reflink=never "$MNT/orig" "$MNT/copy"
sync
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx"
"$BIN/oans-plan" --quiet --round-size 1M "$WORK/idx" -o "$WORK/plan"
"$BIN/oans-apply" --quiet --order=physical "$WORK/plan"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "tree not fully deduped"
physical_du="$(total_bytes "$MNT") $(exclusive_bytes "$MNT")"
[ "$physical_du" = "$shuffled_du" ] || fail "btrfs du differs: physical $physical_du, none $shuffled_du"
pass "order physical: the same result ($physical_du total/exclusive)"
