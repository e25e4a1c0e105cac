#!/usr/bin/env bash
# The systemd template units (examples/systemd/oans@.service, oans@.timer) pass
# `systemd-analyze verify` as an instance (oans@test), with ExecStart pointed at the
# built oans; the options their ExecStart gives are options oans run takes; a real
# failure (2) and a lock still held after the wait (4) are not counted as success.
# Usage: units_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v systemd-analyze > /dev/null || { echo "SKIP: systemd-analyze not installed (run scripts/install-deps)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for kind in service timer; do
  sed "s|/usr/bin/oans |$BUILD/oans |" "$SRC/examples/systemd/oans@.$kind" > "$WORK/oans@test.$kind"
done
grep -q "^ExecStart=$BUILD/oans run " "$WORK/oans@test.service" || fail "ExecStart is not /usr/bin/oans run"
man=(--man=no)
if [ -f "$BUILD/man/man8/oans-run.8" ] && command -v man > /dev/null; then
  man=(--man=yes)
  export MANPATH=$BUILD/man
fi
(cd "$WORK" && systemd-analyze verify "${man[@]}" ./oans@test.service ./oans@test.timer) > "$WORK/verify.out" 2>&1 \
  || { cat "$WORK/verify.out"; fail "systemd-analyze verify"; }
[ ! -s "$WORK/verify.out" ] || { cat "$WORK/verify.out"; fail "systemd-analyze verify warned"; }
echo "ok: systemd-analyze verify oans@test.service oans@test.timer (${man[*]})"

ok=$(sed -n 's/^SuccessExitStatus=//p' "$WORK/oans@test.service")
[ "$ok" = "1 3" ] || fail "SuccessExitStatus=$ok; 2 and 4 must fail the unit"
grep -qx "StateDirectory=oans/%i" "$WORK/oans@test.service" || fail "no StateDirectory=oans/%i"
grep -qx "IOSchedulingClass=idle" "$WORK/oans@test.service" || fail "not idle I/O"
echo "ok: exit codes 2 and 4 fail the unit; StateDirectory and idle I/O set"

# The ExecStart line as systemd expands it for instance "test" and the example
# configuration, each option checked by oans run's parser (--show-config refuses every
# option but --state-dir, so the parse error, if any, is what fails).
set -a
# shellcheck source=examples/oans.conf
source "$SRC/examples/oans.conf"
set +a
line=$(sed -n 's/^ExecStart=//p' "$WORK/oans@test.service")
line=${line//%S/$WORK/state}
line=${line//%i/test}
line=${line//\$\{OANS_WAIT_LOCK\}/$OANS_WAIT_LOCK}
read -ra argv <<< "${line//\$OANS_OPTIONS/$OANS_OPTIONS}"
argv=("${argv[@]/\$OANS_ROOTS/}")
set +e
"${argv[@]}" --show-config > "$WORK/parse.out" 2>&1
set -e
grep -q "^oans run: error: --show-config takes no " "$WORK/parse.out" \
  || fail "oans run did not parse the unit's command line: ${argv[*]}: $(cat "$WORK/parse.out")"
echo "ok: oans run parses the unit's command line: ${argv[*]}"
