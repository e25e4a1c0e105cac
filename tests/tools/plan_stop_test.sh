#!/usr/bin/env bash
# oans-plan stops on SIGINT and SIGTERM within a second, exits 3 (stopped) and leaves
# nothing behind: no plan, no temporary output file, nothing in --temp-dir. It runs on a
# synthetic index big enough to take several seconds to plan, and is signalled while
# loading and while the later stages run.
# Usage: plan_stop_test.sh BIN_DIR (with oans-gen-index and oans-plan).
set -euo pipefail
BIN=$(cd "$1" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*"; exit 1; }

"$BIN/oans-gen-index" -q --files 1500k --seed 21 --max-inline 0 --max-blocks 64 --dup-ratio 0.2 \
  --partial-ratio 0.1 -o big.idx

# How long a whole plan takes here, to signal it part way.
start=$(date +%s%N)
"$BIN/oans-plan" -q --whole-files-only -o /dev/null big.idx
full_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "a whole plan takes ${full_ms} ms"
[ "$full_ms" -ge 1500 ] || fail "planning took only ${full_ms} ms: the index is too small to test stopping"

# SIGINT and SIGTERM, early (loading) and late; and with --since, while the old index is
# read and while the two are joined. The timed runs leave LeakSanitizer's scan at exit out
# (in a sanitizer build it walks the whole heap, several hundred ms that are not the
# tool's); the "leaks" run keeps it and is not timed.
runs=("INT 300" "INT $((full_ms * 2 / 3))" "TERM 300" "TERM $((full_ms * 2 / 3))" "INT 300 --since big.idx"
      "INT $((full_ms * 3 / 4)) --since big.idx" "TERM $((full_ms * 2 / 3)) leaks")
for run in "${runs[@]}"; do
  read -r sig at extra <<<"$run"
  timed=1 asan=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  if [ "$extra" = leaks ]; then timed=0 asan=${ASAN_OPTIONS:-} extra=; fi
  mkdir -p out tmp
  # shellcheck disable=SC2086
  ASAN_OPTIONS=$asan "$BIN/oans-plan" -q --temp-dir tmp --memory 64M $extra -o out/plan big.idx 2>err.txt &
  pid=$!
  sleep "$(awk "BEGIN { print $at / 1000 }")"
  kill -0 $pid 2>/dev/null || fail "oans-plan ended before SIG$sig at ${at} ms"
  sent=$(date +%s%N)
  kill -$sig $pid
  rc=0
  wait $pid || rc=$?
  took_ms=$(( ($(date +%s%N) - sent) / 1000000 ))
  [ $rc = 3 ] || fail "SIG$sig at ${at} ms: exit $rc, expected 3 (stopped): $(cat err.txt)"
  [ $timed = 0 ] || [ "$took_ms" -le 1000 ] || fail "SIG$sig at ${at} ms: took ${took_ms} ms to stop"
  grep -q "stopped; no plan written" err.txt || fail "SIG$sig: no 'stopped' message: $(cat err.txt)"
  left=$(find out tmp -mindepth 1)
  [ -z "$left" ] || fail "SIG$sig at ${at} ms left files behind: $left"
  echo "ok: SIG$sig at ${at} ms ${extra:-}: stopped in ${took_ms} ms$([ $timed = 1 ] || echo ' (leak check on, not timed)'), exit 3, nothing left"
  rm -rf out tmp
done
echo "PASS"
