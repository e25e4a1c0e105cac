#!/usr/bin/env bash
# Plans are byte-identical across changes to the planner: this script builds plans from
# oans-gen-index indexes (deterministic for given options) in many configurations and
# compares each plan's SHA-256 with the sum recorded in plan_golden.sha256.
#
# Normalisation: a plan's header records when it was made (created_ns) and the command
# line. The command line is made identical by running oans-plan by name from PATH with
# relative file names in a fresh directory; created_ns is removed from the header line of
# `oans-cat PLAN` (every other field of the header, and every round, file and operation,
# stays as oans-cat prints it). The sum is of that text.
#
# Cases: in memory and spilled (--memory 16M), whole files only, each
# --since case (the same index: nothing new; an index of fewer files; another
# filesystem: everything new), merged indexes (two filesystems; one index twice: duplicate
# inodes), and small rounds.
#
# Usage: plan_golden_test.sh BIN_DIR [--write]   (--write prints the sums instead)
set -euo pipefail
BIN=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WRITE=${2:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export PATH="$BIN:$PATH"

gen() { oans-gen-index -q --max-inline 0 --max-blocks 64 "$@"; }
gen --files 100k --seed 11 --dup-ratio 0.2 --shared-ratio 0.3 --partial-ratio 0.1 -o big.idx
gen --files 20k --seed 11 --dup-ratio 0.1 --shared-ratio 0.2 --partial-ratio 0.05 -o old.idx
gen --files 20k --seed 12 --dup-ratio 0.3 --partial-ratio 0.2 -o other.idx
oans-gen-index -q --files 20k --seed 13 --dup-ratio 0.2 -o inline.idx

cases=(
  "default|big.idx"
  "spilled|--memory 16M big.idx"
  "whole-files|--whole-files-only big.idx"
  "whole-files-spilled|--whole-files-only --memory 16M big.idx"
  "small-rounds|--round-size 1M big.idx"
  "since-same|--since big.idx big.idx"
  "since-fewer|--since old.idx big.idx"
  "since-fewer-spilled|--since old.idx --memory 16M big.idx"
  "since-other-fs|--since other.idx big.idx"
  "two-filesystems|big.idx other.idx"
  "same-index-twice|big.idx big.idx"
  "same-index-twice-spilled|--memory 16M old.idx big.idx old.idx"
  "inline|inline.idx"
)

declare -A want
while read -r sum name; do want[$name]=$sum; done <"$HERE/plan_golden.sha256"

failed=0
for c in "${cases[@]}"; do
  name=${c%%|*}
  # shellcheck disable=SC2086
  oans-plan -q -o "$name.plan" ${c#*|}
  got=$(oans-cat "$name.plan" | sed -E '1s/"created_ns":[0-9]+,//' | sha256sum | cut -d' ' -f1)
  if [ "$WRITE" = --write ]; then
    echo "$got $name"
  elif [ "${want[$name]:-}" != "$got" ]; then
    echo "FAIL: $name (oans-plan ${c#*|}): sha256 $got, expected ${want[$name]:-none recorded}"
    failed=1
  fi
done
[ "$WRITE" = --write ] && exit 0
[ $failed = 0 ] || exit 1
echo "PASS: ${#cases[@]} plans byte-identical to the recorded ones"
