#!/usr/bin/env bash
# oans-plan keeps to --memory plus a fixed overhead (lib/plan/budget.h).
# A synthetic index of FILES files is planned at two budgets.
# Each run's peak RSS (getrusage) must be within the budget plus the overhead.
# Both plans must be the same, but for the command line and the time.
# Usage: plan_memory_test.sh BIN_DIR [FILES [BUDGET...]]
#   defaults: 3M files at --memory 32M and 128M.
#   The release figures: plan_memory_test.sh build 10M 128M 512M.
set -euo pipefail
BIN=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
FILES=${2:-3M}
shift $(($# < 2 ? $# : 2))
BUDGETS=("$@")
[ ${#BUDGETS[@]} -gt 0 ] || BUDGETS=(32M 128M)
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
if grep -qa -e __asan_init -e __tsan_init "$BIN/oans-plan"; then
  echo "SKIP: a sanitizer's shadow memory is no measure of the budget"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/plan-memory.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*"; exit 1; }

# The overhead, as budget.h states it.
overhead=$(sed -nE 's/^inline constexpr uint64_t kFixedOverhead = ([0-9]+)ull << 20;.*/\1/p' \
  "$HERE/../../lib/plan/budget.h")
[ -n "$overhead" ] || fail "kFixedOverhead not found in lib/plan/budget.h"

"$BIN/oans-gen-index" -q --files "$FILES" --dup-ratio 0.1 --partial-ratio 0.05 -o big.idx

# Runs oans-plan; prints its peak RSS in KiB.
peak() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:])
if r.returncode != 0:
    sys.exit("oans-plan exited with %d" % r.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

mib() { echo $(( $1 / 1024 )); }
budget_mib() {
  case $1 in
    *G) echo $(( ${1%G} * 1024 )) ;;
    *M) echo "${1%M}" ;;
    *) fail "budget $1: give it in M or G" ;;
  esac
}
first=
for b in "${BUDGETS[@]}"; do
  mkdir -p "tmp-$b"
  kib=$(peak "$BIN/oans-plan" -q --memory "$b" --temp-dir "tmp-$b" -o "$b.plan" big.idx)
  limit_mib=$(( $(budget_mib "$b") + overhead ))
  echo "$FILES files at --memory $b: peak RSS $(mib "$kib") MiB (limit $limit_mib MiB)"
  [ "$(mib "$kib")" -le "$limit_mib" ] || fail "--memory $b: peak RSS $(mib "$kib") MiB over $limit_mib MiB"
  # The plan without the header's time and command line.
  "$BIN/oans-cat" "$b.plan" | sed -E '1s/"created_ns":[0-9]+,//; 1s/"command_line":\[[^]]*\],?//' >"$b.txt"
  if [ -z "$first" ]; then
    first=$b
    ops=$(grep -c . "$b.txt")
    [ "$ops" -gt 100 ] || fail "the plan at --memory $b has only $ops lines"
  elif ! cmp -s "$first.txt" "$b.txt"; then
    fail "the plans at --memory $first and $b differ"
  fi
done
echo "PASS: ${BUDGETS[*]}: within the budget plus $overhead MiB, the same plan"
