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

stop_then_resume --order=none
python3 - "$WORK/plan.journal" "$rounds" <<'PY' || fail "journal: $(cat "$WORK/plan.journal")"
import sys
lines = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
done = [int(l[1]) for l in lines]
assert done != list(range(int(sys.argv[2]))), done   # not in the plan's order
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
