#!/usr/bin/env bash
# A filesystem that cannot share data as asked is found before any work: ext4 without
# --link=hard, XFS made without reflink, tmpfs. oans run refuses such roots with one line
# naming the fix and exit 2 before it scans (no state directory is left); oans-apply
# refuses a plan of them with one line and exit 2 before it opens a file (no journal);
# oans-scan says it once and scans; with --link=hard, oans run dedupes them. Then, on
# btrfs, an apply's problems with many files for one reason are printed for the first
# ten files and counted in one line. Every file's content, owner and mode is unchanged.
source "$(dirname "$0")/lib.sh"
it_init "$1"
export OANS_STATE_BASE=$WORK/state

# meta DIR -> "mode uid gid path" of every file and directory, sorted.
meta() { (cd "$1" && find . -printf '%m %U %G %p\n' | sort); }

# one_line_refusal NAME FILE RC FIX: RC is 2 and FILE is one error line naming FIX.
one_line_refusal() {
  cat "$2"
  [ "$3" = 2 ] || fail "$1: exit $3, expected 2"
  [ "$(wc -l < "$2")" = 1 ] || fail "$1: $(wc -l < "$2") lines, expected one"
  grep -q -- "$4" "$2" || fail "$1: the fix ($4) is not named"
}

# refused NAME ROOT FIX...: oans run, oans-apply and oans-scan on a tree in ROOT.
refused() {
  local name=$1 root=$2 rc fix
  shift 2
  make_tree "$root/orig"
  cp -a "$root/orig" "$root/copy"
  chown -R 1234:5678 "$root/copy/src/sub"
  chmod 0640 "$root/copy/src/file3.bin"
  sync
  local before meta_before
  before=$(checksums "$root")
  meta_before=$(meta "$root")
  set +e
  "$BIN/oans" run "$root" > /dev/null 2> "$WORK/$name.run.err"
  rc=$?
  set -e
  for fix in "$@"; do one_line_refusal "oans run on $name" "$WORK/$name.run.err" $rc "$fix"; done
  [ -z "$(ls -A "$OANS_STATE_BASE" 2>/dev/null)" ] || fail "$name: the refused run left a state directory"
  "$BIN/oans-scan" "$root" -o "$WORK/$name.idx" 2> "$WORK/$name.scan.err"
  [ "$(grep -c "cannot share data between files" "$WORK/$name.scan.err")" = 1 ] \
    || fail "$name: oans-scan did not say it once: $(cat "$WORK/$name.scan.err")"
  "$BIN/oans-plan" --quiet "$WORK/$name.idx" -o "$WORK/$name.plan"
  set +e
  "$BIN/oans-apply" "$WORK/$name.plan" > /dev/null 2> "$WORK/$name.apply.err"
  rc=$?
  set -e
  for fix in "$@"; do one_line_refusal "oans-apply on $name" "$WORK/$name.apply.err" $rc "$fix"; done
  [ ! -e "$WORK/$name.plan.journal" ] || fail "$name: oans-apply began (a journal was made)"
  [ "$before" = "$(checksums "$root")" ] || fail "$name: contents changed"
  [ "$meta_before" = "$(meta "$root")" ] || fail "$name: owners or modes changed"
  pass "$name: oans run and oans-apply refused with one line naming the fix, before any work; oans-scan said it once"
}

# linked NAME ROOT: oans run --link=hard dedupes the tree of `refused` as hardlinks.
linked() {
  local name=$1 root=$2 rc
  local before meta_before
  before=$(checksums "$root")
  meta_before=$(meta "$root")
  set +e
  "$BIN/oans" run --quiet --link=hard --plan-option=--whole-files-only "$root"
  rc=$?
  set -e
  [ $rc = 0 ] || [ $rc = 1 ] || fail "$name: oans run --link=hard: exit $rc"
  [ "$(stat -c %i "$root/orig/media/big1.bin")" = "$(stat -c %i "$root/copy/media/big1.bin")" ] \
    || fail "$name: big1.bin not linked"
  [ "$before" = "$(checksums "$root")" ] || fail "$name: contents changed"
  [ "$meta_before" = "$(meta "$root")" ] || fail "$name: owners or modes changed"
  rm -rf "$OANS_STATE_BASE"
  pass "$name: oans run --link=hard linked the copies"
}

mkfs_mount ext4 512M
refused ext4 "$MNT" "is on ext4, which cannot share data between files: give --link=hard"
linked ext4 "$MNT"

mkfs_mount xfs-noreflink 512M
refused xfs-noreflink "$MNT" "is on XFS made without reflink" "mkfs.xfs -m reflink=1" "--link=hard"

mkdir -p "$WORK/mnt-tmpfs"
mount -t tmpfs -o size=400M,mode=0755 oans-it "$WORK/mnt-tmpfs"
MOUNTS+=("$WORK/mnt-tmpfs")
refused tmpfs "$WORK/mnt-tmpfs" "is on tmpfs, which cannot share data between files: give --link=hard"
linked tmpfs "$WORK/mnt-tmpfs"

# XFS made with reflink is not refused (e2e_xfs.sh dedupes there).
mkfs_mount xfs 512M
"$BIN/oans-scan" "$MNT" -o "$WORK/xfs.idx" 2>&1 | grep -q "cannot share" && fail "XFS with reflink: a notice"
pass "XFS made with reflink: no notice"

# btrfs: 30 files modified after the plan, each skipped for the same reason: three lines
# name files, one counts the other 27.
mkfs_mount btrfs 512M
tree_and_copy
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/btrfs.idx"
"$BIN/oans-plan" --quiet "$WORK/btrfs.idx" -o "$WORK/btrfs.plan"
for i in $(seq 2 31); do touch -m -d '2001-01-01' "$MNT/copy/src/file$i.bin"; done
before=$(checksums "$MNT")
set +e
"$BIN/oans-apply" "$WORK/btrfs.plan" 2> "$WORK/btrfs.apply.err"
rc=$?
set -e
cat "$WORK/btrfs.apply.err"
[ $rc = 1 ] || fail "apply with modified files: exit $rc, expected 1"
named=$(grep -c "/copy/src/file[0-9]*\.bin: skipped, changed since scan (modified)$" "$WORK/btrfs.apply.err" || true)
[ "$named" = 10 ] || fail "$named files named for the reason, expected 10"
grep -qx "oans-apply: 20 more files: skipped, changed since scan (modified)" "$WORK/btrfs.apply.err" \
  || fail "the other 20 files are not counted in one line"
[ "$before" = "$(checksums "$MNT")" ] || fail "btrfs: contents changed"
pass "per-file problems: 10 files named, 20 more counted in one line"
