#!/usr/bin/env bash
# oans-plan stops on SIGINT and SIGTERM, exits 3 (stopped) and leaves nothing behind: no
# plan, no temporary output file, nothing in --temp-dir. It runs on a synthetic index big
# enough to take several seconds to plan, and is signalled in a known stage: the stage is
# read from its progress lines (--progress json), not guessed from the time it has run, so
# a slow or loaded machine only makes the test slower. A planner that ignores the signal
# runs to the end and writes its plan (exit 0, a plan left): the test fails then, and also
# when it has not stopped 20 s after the signal (a hang; stopping takes milliseconds).
# Usage: plan_stop_test.sh BIN_DIR (with oans-gen-index and oans-plan).
set -euo pipefail
BIN=$(cd "$1" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*"; exit 1; }

FILES=1500000
"$BIN/oans-gen-index" -q --files "$FILES" --seed 21 --max-inline 0 --max-blocks 64 --dup-ratio 0.2 \
  --partial-ratio 0.1 -o big.idx
cp big.idx old.idx

# progress_field FIELD: that number from each progress line of err.txt ("phase":"load"...)
progress_field() { grep -o "\"$1\":[0-9]*" err.txt | cut -d: -f2; }

# in_stage STAGE PID: whether the planner (PID, stderr in err.txt) has shown it is in STAGE:
#   old:        reading the --since index (old.idx is open and no index is loaded yet)
#   load:       loading the index
#   late-load:  loading its last tenth (or joining it with the --since index, or later)
#   group:      grouping whole files
#   last-group: grouping its last 65536 files (or planning blocks, or later)
in_stage() {
  local fd
  case $1 in
    old)
      grep -q '"phase"' err.txt && return 1
      for fd in /proc/"$2"/fd/*; do [[ $(readlink "$fd" 2>/dev/null) == */old.idx ]] && return 0; done
      return 1 ;;
    load) grep -q '"phase":"load"' err.txt ;;
    late-load) grep '"phase":"load"' err.txt > stage.txt || return 1
      grep -o '"done_items":[0-9]*' stage.txt | cut -d: -f2 | awk -v n="$FILES" '$1 >= n * 9 / 10 { f = 1 } END { exit !f }' ;;
    group) grep -q '"phase":"group"' err.txt ;;
    last-group) grep '"phase":"group"' err.txt > stage.txt || return 1
      sed -E 's/.*"done_items":([0-9]+).*"total_items":([0-9]+).*/\1 \2/' stage.txt |
        awk '$1 + 65536 > $2 { f = 1 } END { exit !f }' ;;
  esac
}

# SIGINT and SIGTERM, while loading and in later stages; with --since, while the old index
# is read and while the two are joined. The last run keeps LeakSanitizer's scan at exit on
# (in a sanitizer build); the others leave it out, as it walks the whole heap.
runs=("INT load" "INT last-group" "TERM load" "TERM group" "INT old --since old.idx"
      "INT late-load --since old.idx" "TERM last-group leaks")
for run in "${runs[@]}"; do
  read -r sig stage extra <<<"$run"
  asan=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  if [ "$extra" = leaks ]; then asan=${ASAN_OPTIONS:-} extra=; fi
  mkdir -p out tmp
  : > err.txt
  # shellcheck disable=SC2086  # $extra is empty or an option and its value
  ASAN_OPTIONS=$asan "$BIN/oans-plan" -q --progress json --temp-dir tmp --memory 64M $extra -o out/plan big.idx \
    2>err.txt &
  pid=$!
  until in_stage "$stage" $pid; do
    kill -0 $pid 2>/dev/null || { wait $pid || true; fail "oans-plan ended before the '$stage' stage: $(tail -n 3 err.txt)"; }
    sleep 0.02
  done
  sent=$(date +%s%N)
  kill -s "$sig" $pid
  for _ in $(seq 400); do
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 $pid 2>/dev/null; then
    kill -9 $pid
    fail "SIG$sig in the '$stage' stage: still running 20 s later"
  fi
  rc=0
  wait $pid || rc=$?
  took_ms=$(( ($(date +%s%N) - sent) / 1000000 ))
  [ $rc = 3 ] || fail "SIG$sig in the '$stage' stage: exit $rc, expected 3 (stopped): $(grep -v '"phase"' err.txt)"
  grep -q "stopped; no plan written" err.txt || fail "SIG$sig: no 'stopped' message: $(grep -v '"phase"' err.txt)"
  left=$(find out tmp -mindepth 1)
  [ -z "$left" ] || fail "SIG$sig in the '$stage' stage left files behind: $left"
  echo "ok: SIG$sig in the '$stage' stage ${extra:-}: stopped (in about ${took_ms} ms), exit 3, nothing left"
  rm -rf out tmp
done
echo "PASS"
