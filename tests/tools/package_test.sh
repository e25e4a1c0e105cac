#!/usr/bin/env bash
# The Debian package made by CPack holds what a user needs, and runs on its own:
#   - dpkg -c lists the binaries, the systemd units (in /lib/systemd/system, enabled by
#     nothing in the package), /etc/oans/example.conf (a conffile), /var/lib/oans (0700),
#     the documents (reliability.md, nas-quickstart.md, copyright, changelog), a man page
#     in section 8 for oans, oans run and every tool, and the bash completions;
#   - lintian lists no error; the binaries are stripped;
#   - each man page has FILES and ENVIRONMENT, and renders each example of its --help
#     on a line of its own (help2man did not run them into a paragraph), without a
#     warning from man;
#   - unpacked with dpkg -x into a temporary directory, oans --version runs from there,
#     and `oans scan --version` runs the oans-scan beside it (nothing outside is used);
#   - the installed completion completes `oans pl` to plan and `oans run --plan-on` to --plan-only.
# Usage: package_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
for t in cpack dpkg dpkg-deb; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[ -f "$BUILD/man/man8/oans.8" ] || { echo "SKIP: no man pages built (help2man not installed)"; exit 77; }
command -v lintian > /dev/null || { echo "SKIP: lintian not installed (run scripts/install-deps)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$BUILD" && cpack -G DEB -B "$WORK/out" > "$WORK/cpack.log" 2>&1) || { cat "$WORK/cpack.log"; fail "cpack"; }
deb=$(ls "$WORK"/out/*.deb)
dpkg -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$WORK/list"
want=(/usr/bin/oans /usr/bin/oans-scan /usr/bin/oans-plan /usr/bin/oans-apply /usr/bin/oans-cat /usr/bin/oans-diff
      /lib/systemd/system/oans@.service /lib/systemd/system/oans@.timer
      /usr/share/doc/oans/examples/oans.conf /usr/share/doc/oans/examples/cron
      /etc/oans/example.conf /var/lib/oans/ /usr/share/doc/oans/reliability.md /usr/share/doc/oans/nas-quickstart.md
      /usr/share/doc/oans/copyright /usr/share/doc/oans/changelog.gz)
pages=(oans oans-run oans-scan oans-plan oans-apply oans-cat oans-diff)
for page in "${pages[@]}"; do
  want+=("/usr/share/man/man8/$page.8.gz")
done
for c in oans oans-scan oans-plan oans-apply oans-cat oans-diff; do
  want+=("/usr/share/bash-completion/completions/$c")
done
for f in "${want[@]}"; do
  grep -qx -- "$f" "$WORK/list" || fail "$f is not in the package: $(cat "$WORK/list")"
done
echo "ok: dpkg -c lists ${#want[@]} expected files (binaries, units, example, man pages, completions)"
dpkg-deb -e "$deb" "$WORK/control"
if grep -qs "systemctl\|deb-systemd-helper" "$WORK/control/postinst"; then fail "the package enables a unit"; fi
echo "ok: the units are installed disabled"
grep -qx /etc/oans/example.conf "$WORK/control/conffiles" || fail "example.conf is not a conffile"
dpkg -c "$deb" | grep -q "^drwx------ root/root .* ./var/lib/oans/$" || fail "/var/lib/oans: $(dpkg -c "$deb" | grep var/lib)"
echo "ok: /etc/oans/example.conf is a conffile; /var/lib/oans is 0700"

# lintian: no error (warnings and notes are printed, not failed on).
lintian --allow-root --fail-on error --display-info "$deb" > "$WORK/lintian.out" 2>&1 || { cat "$WORK/lintian.out"; fail "lintian"; }
cat "$WORK/lintian.out"
! grep -q "^E: " "$WORK/lintian.out" || fail "lintian errors"
echo "ok: lintian lists no error ($(grep -c "^[WIN]: " "$WORK/lintian.out" || true) warnings and notes)"

dpkg -x "$deb" "$WORK/root"
v=$(env -i "$WORK/root/usr/bin/oans" --version)
[[ $v == "oans (oans) "* ]] || fail "oans --version from the unpacked package: $v"
s=$(env -i "$WORK/root/usr/bin/oans" scan --version)
[[ $s == "oans-scan (oans) "* ]] || fail "oans scan --version: $s"
echo "ok: unpacked: $v; oans scan runs its sibling: $s"
for b in "$WORK"/root/usr/bin/*; do
  ! readelf -S "$b" | grep -q "\.symtab\|\.debug_" || fail "$b is not stripped"
done
echo "ok: stripped; installed size $(du -sh "$WORK/root" | cut -f1)"

# Man pages: section 8, FILES and ENVIRONMENT, the examples of --help each on its own line.
for page in "${pages[@]}"; do
  man8=$WORK/root/usr/share/man/man8/$page.8.gz
  zcat "$man8" | grep -q '^\.TH "\?[A-Z-]*"\? "\?8' || fail "$page is not in section 8: $(zcat "$man8" | grep '^\.TH')"
  for s in FILES ENVIRONMENT; do zcat "$man8" | grep -q "^\.SH $s" || fail "$page has no $s"; done
  MANWIDTH=250 man --warnings -l "$man8" > "$WORK/$page.txt" 2> "$WORK/$page.warn"
  [ ! -s "$WORK/$page.warn" ] || fail "man warns on $page: $(cat "$WORK/$page.warn")"
  case $page in oans) help=("$WORK/root/usr/bin/oans" --help) ;; oans-run) help=("$WORK/root/usr/bin/oans" run --help) ;;
    *) help=("$WORK/root/usr/bin/$page" --help) ;; esac
  env -i "${help[@]}" | sed -n '/^Examples:/,/^[^ ]/p' | grep '^  oans' | sed 's/^  //; s/  .*//' > "$WORK/$page.examples"
  [ -s "$WORK/$page.examples" ] || fail "$page: no examples in --help"
  python3 - "$WORK/$page.txt" "$WORK/$page.examples" <<'PY' || fail "$page: an example of --help is not on a line of its own"
import sys
norm = lambda t: " ".join(t.split())
lines = [norm(l) for l in open(sys.argv[1], encoding="utf-8")]
for ex in open(sys.argv[2]).read().splitlines():
    assert any(l.startswith(norm(ex)) for l in lines), ex
PY
done
echo "ok: ${#pages[@]} man pages in section 8 with FILES and ENVIRONMENT, every example on its own line"
zcat "$WORK/root/usr/share/man/man8/oans-run.8.gz" | grep -q "state directory" || fail "oans-run.8 is not oans run's manual"

COMP_WORDS=(oans pl); COMP_CWORD=1
# shellcheck source=completions/oans.bash
source "$WORK/root/usr/share/bash-completion/completions/oans"
_oans_tool
[ "${COMPREPLY[*]}" = plan ] || fail "oans pl completes to '${COMPREPLY[*]}'"
COMP_WORDS=(oans run --plan-on); COMP_CWORD=2
_oans_tool
[ "${COMPREPLY[*]}" = --plan-only ] || fail "oans run --plan-on completes to '${COMPREPLY[*]}'"
COMP_WORDS=(oans-plan --format d); COMP_CWORD=2
_oans_tool
[ "${COMPREPLY[*]}" = "dirs dirs-json" ] || fail "oans-plan --format d completes to '${COMPREPLY[*]}'"
echo "ok: completion for oans COMMAND"
