#!/usr/bin/env bash
# The bash completion (completions/oans.bash) offers every option each command's --help
# lists, and no option that --help does not list: for oans-scan, oans-plan, oans-apply,
# oans-cat, oans-diff, oans run, oans status and oans apply (which also takes
# --state-dir). Values are completed for the options that take one of a fixed set.
# Usage: completion_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=completions/oans.bash
source "$SRC/completions/oans.bash"
complete_words() {  # the completions of the words given, the last being completed
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _oans_tool
  printf '%s\n' "${COMPREPLY[@]}" | sort -u
}
options_of() {  # every --option that --help lists
  "$@" --help | grep -oE '^ +(-[a-zA-Z], ?)?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
check() {  # check "WORDS BEFORE" COMMAND...
  local before=$1
  shift
  read -ra words <<< "$before"
  diff <(options_of "$@") <(complete_words "${words[@]}" --) > "$WORK" \
    || fail "$before: completion and --help differ (< --help only, > completion only): $(cat "$WORK")"
  echo "ok: $before: $(options_of "$@" | wc -l) options, as --help lists them"
}
WORK=$(mktemp)
trap 'rm -f "$WORK"' EXIT
for t in scan plan apply cat diff; do check "oans-$t" "$BUILD/oans-$t"; done
check "oans run" "$BUILD/oans" run
check "oans status" "$BUILD/oans" status
# oans apply: oans-apply's options and --state-dir.
diff <( (options_of "$BUILD/oans-apply"; echo --state-dir) | sort -u) <(complete_words oans apply --) > "$WORK" \
  || fail "oans apply: $(cat "$WORK")"
echo "ok: oans apply: oans-apply's options and --state-dir"
[ "$(complete_words oans run --exclude-preset '')" = nas ] || fail "oans run --exclude-preset: $(complete_words oans run --exclude-preset '')"
[ "$(complete_words oans-scan --exclude-preset '')" = nas ] || fail "oans-scan --exclude-preset"
[ "$(complete_words oans-apply --storage '' | tr '\n' ' ')" = "auto hdd ssd " ] || fail "oans-apply --storage"
echo "ok: values of --exclude-preset and --storage"
