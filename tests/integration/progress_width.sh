#!/usr/bin/env bash
# Progress on terminals of 80 and 60 columns (a pseudo-terminal whose size is set, as a
# user's): no line and no refresh of a progress line reaches the last column, so none
# wraps into a stack of lines; counts say what they count; a notice naming a long path
# is wrapped, not cut; oans run's tools and oans status keep within the width too.
source "$(dirname "$0")/lib.sh"
it_init "$1"
here=$(dirname "$0")
plan_many_rounds
# A duplicate deep below long names that the apply must skip (immutable): its notice is
# longer than a line.
long=$MNT/copy/a-directory-with-a-rather-long-name/and-another-one-below-it-for-the-width-test
mkdir -p "$long"
cp --reflink=never "$MNT/orig/media/big2.bin" "$long/big2-again.bin"
chattr +i "$long/big2-again.bin"
sync
before=$(checksums "$MNT")

pty() { python3 "$here/pty_run.py" "$@"; }
for cols in 80 60; do
  # --read-data and a read rate keep each tool long enough to refresh its line.
  pty "$cols" "$WORK/scan.$cols.tty" "$BIN/oans-scan" --progress=tty --read-data -o "$WORK/idx.$cols" "$MNT" \
    || fail "oans-scan in a pty: $(cat -v "$WORK/scan.$cols.tty")"
  pty "$cols" "$WORK/plan.$cols.tty" "$BIN/oans-plan" --progress=tty --round-size 1M -o "$WORK/plan.$cols" \
    "$WORK/idx.$cols" || fail "oans-plan in a pty: $(cat -v "$WORK/plan.$cols.tty")"
  set +e
  # (A dry run's operations go to stdout, left out here.)
  pty "$cols" "$WORK/apply.$cols.tty" sh -c 'exec "$@" > /dev/null' sh \
    "$BIN/oans-apply" --progress=tty --dry-run --max-rate 16M "$WORK/plan.$cols"
  rc=$?
  set -e
  [ $rc = 0 ] || [ $rc = 1 ] || fail "oans-apply in a pty: exit $rc: $(cat -v "$WORK/apply.$cols.tty")"
  n=$(python3 "$here/pty_width.py" "$cols" "$WORK/scan.$cols.tty" "$WORK/plan.$cols.tty" "$WORK/apply.$cols.tty") \
    || fail "lines wider than $cols columns: $(cat -v "$WORK/apply.$cols.tty" | head -c 3000)"
  grep -aq "oans-apply dedupe: .* rounds (" "$WORK/apply.$cols.tty" || fail "apply's count is not of rounds"
  [ "$(grep -ao "oans-apply dedupe: " "$WORK/apply.$cols.tty" | wc -l)" -ge 3 ] || fail "apply refreshed its line less than 3 times"
  pass "$cols columns: $n progress refreshes, each line within $((cols - 1)) columns"
done
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed by a dry run"

# The apply, for real: the immutable copy's notice names its whole path over several lines.
set +e
pty 80 "$WORK/apply.real" "$BIN/oans-apply" --progress=tty "$WORK/plan.80"
rc=$?
set -e
chattr -i "$long/big2-again.bin"
[ $rc = 1 ] || fail "apply with an immutable copy: exit $rc, expected 1: $(cat -v "$WORK/apply.real")"
python3 "$here/pty_width.py" 80 "$WORK/apply.real" > /dev/null || fail "apply's notice: $(cat -v "$WORK/apply.real")"
python3 - "$WORK/apply.real" "$long/big2-again.bin" <<'PY' || fail "the notice lost its path: $(cat -v "$WORK/apply.real")"
import sys
text = open(sys.argv[1], "rb").read().decode().replace("\r\n", "\n").replace("\x1b[K", "")
lines = [l.split("\r")[-1] for l in text.split("\n")]
at = next(i for i, l in enumerate(lines) if l.startswith("oans-apply: ") and "/" in l or l.startswith("  /"))
joined = "".join(l[2:] if l.startswith("  ") else l for l in lines[at:at + 4])
assert sys.argv[2] in joined and "EPERM" in joined, joined
PY
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
pass "a notice longer than a line is wrapped with its path whole"

# oans run, its tools beneath it, and oans status on an 80-column terminal.
export OANS_STATE_BASE=$WORK/state
pty 80 "$WORK/run.80" "$BIN/oans" run --progress=tty --max-rate 32M "$MNT" || fail "oans run in a pty: $(cat -v "$WORK/run.80")"
pty 80 "$WORK/status.80" "$BIN/oans" status || fail "oans status"
cat "$WORK/status.80"
python3 "$here/pty_width.py" 80 "$WORK/run.80" "$WORK/status.80" > /dev/null \
  || fail "oans run or status wider than 79 columns: $(cat -v "$WORK/run.80" "$WORK/status.80")"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed in oans run"
pass "oans run and oans status within 80 columns"
