#!/usr/bin/env bash
# The Debian package made by CPack holds what a user needs, and runs on its own:
#   - dpkg -c lists the binaries, the systemd units (in /lib/systemd/system, enabled by
#     nothing in the package), the example configuration, a man page for oans, oans run
#     and every tool, and the bash completions for oans and every tool;
#   - unpacked with dpkg -x into a temporary directory, oans --version runs from there,
#     and `oans scan --version` runs the oans-scan beside it (nothing outside is used);
#   - the installed completion completes `oans pl` to plan and `oans run --plan-on` to --plan-only.
# Usage: package_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
for t in cpack dpkg dpkg-deb; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[ -f "$BUILD/man/oans.1" ] || { echo "SKIP: no man pages built (help2man not installed)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$BUILD" && cpack -G DEB -B "$WORK/out" > "$WORK/cpack.log" 2>&1) || { cat "$WORK/cpack.log"; fail "cpack"; }
deb=$(ls "$WORK"/out/*.deb)
dpkg -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$WORK/list"
want=(/usr/bin/oans /usr/bin/oans-scan /usr/bin/oans-plan /usr/bin/oans-apply /usr/bin/oans-cat /usr/bin/oans-diff
      /lib/systemd/system/oans@.service /lib/systemd/system/oans@.timer
      /usr/share/doc/oans/examples/oans.conf /usr/share/doc/oans/examples/cron)
for page in oans oans-run oans-scan oans-plan oans-apply oans-cat oans-diff; do
  want+=("/usr/share/man/man1/$page.1")
done
for c in oans oans-scan oans-plan oans-apply oans-cat oans-diff; do
  want+=("/usr/share/bash-completion/completions/$c")
done
for f in "${want[@]}"; do
  grep -qx -- "$f\(\.gz\)\?" "$WORK/list" || fail "$f is not in the package: $(cat "$WORK/list")"
done
echo "ok: dpkg -c lists ${#want[@]} expected files (binaries, units, example, man pages, completions)"
dpkg-deb -e "$deb" "$WORK/control"
if grep -qs "systemctl\|deb-systemd-helper" "$WORK/control/postinst"; then fail "the package enables a unit"; fi
echo "ok: the units are installed disabled"

dpkg -x "$deb" "$WORK/root"
v=$(env -i "$WORK/root/usr/bin/oans" --version)
[[ $v == "oans (oans) "* ]] || fail "oans --version from the unpacked package: $v"
s=$(env -i "$WORK/root/usr/bin/oans" scan --version)
[[ $s == "oans-scan (oans) "* ]] || fail "oans scan --version: $s"
echo "ok: unpacked: $v; oans scan runs its sibling: $s"
grep -q "state directory" "$WORK/root/usr/share/man/man1/oans-run.1" || fail "oans-run.1 is not oans run's manual"

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
