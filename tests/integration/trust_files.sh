#!/usr/bin/env bash
# Trust boundaries of the files oans writes and reads as instructions: outputs never
# follow a planted symlink (to a file or a block device) and leave nothing behind when
# killed; apply refuses a plan or journal that another user could have written; a name
# with a newline cannot inject a line into one-path-per-line reports; --until refuses a
# missed window. Every file's content is compared before and after.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v btrfs >/dev/null || { echo "SKIP: btrfs-progs not installed"; exit 77; }
expect_refused() {  # expect_refused PATTERN CMD... : exit 2 and PATTERN on stderr
  local pat=$1; shift
  set +e
  "$@" > "$WORK/out" 2> "$WORK/err" < /dev/null
  local rc=$?
  set -e
  [ $rc -eq 2 ] || fail "$* exited $rc, expected 2 ($(cat "$WORK/err"))"
  grep -q -- "$pat" "$WORK/err" || fail "$*: message lacks '$pat': $(cat "$WORK/err")"
  pass "$* -> $(head -1 "$WORK/err")"
}

mkfs_mount btrfs 256M
tree_and_copy
before=$(checksums "$MNT")
"$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx"

# --- Outputs: a planted symlink is refused, to a file or to a block device. ---
shared=$WORK/shared   # a directory other users can write, as /tmp
mkdir -m 1777 "$shared"
printf 'precious\n' > "$WORK/victim"
ln -s "$WORK/victim" "$shared/plan"
expect_refused "is a symbolic link" "$BIN/oans-plan" "$WORK/idx" -o "$shared/plan"
expect_refused "is a symbolic link" "$BIN/oans-plan" --format fdupes "$WORK/idx" -o "$shared/plan"
expect_refused "is a symbolic link" "$BIN/oans-scan" --quiet "$MNT/orig" -o "$shared/plan"
[ "$(cat "$WORK/victim")" = precious ] || fail "the symlink's target was written"
truncate -s 8M "$WORK/disk.img"
rand_file "$WORK/disk.img" $((8 << 20)) 77
dev=$(losetup -f --show "$WORK/disk.img")
LOOPS+=("$dev")
dev_sum=$(sha256sum < "$dev")
ln -s "$dev" "$shared/index"
expect_refused "is a symbolic link" "$BIN/oans-plan" "$WORK/idx" -o "$shared/index"
expect_refused "is a symbolic link" "$BIN/oans-scan" --quiet "$MNT/orig" -o "$shared/index"
expect_refused "is a block device" "$BIN/oans-plan" "$WORK/idx" -o "$dev"
[ "$dev_sum" = "$(sha256sum < "$dev")" ] || fail "the block device was written"
pass "outputs never write through a planted symlink or into a block device"

# /dev/null and a FIFO are still written in place.
"$BIN/oans-plan" --quiet "$WORK/idx" -o /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a device"
mkfifo "$WORK/fifo"
cat "$WORK/fifo" > "$WORK/from-fifo" &
reader=$!
"$BIN/oans-plan" --quiet "$WORK/idx" -o "$WORK/fifo"
wait $reader
[ -p "$WORK/fifo" ] || fail "the FIFO was replaced"
"$BIN/oans-plan" --quiet "$WORK/idx" -o "$WORK/plan"
cmp -s <("$BIN/oans-cat" "$WORK/from-fifo" | grep -v created) <("$BIN/oans-cat" "$WORK/plan" | grep -v created) ||
  fail "the plan written into the FIFO differs"
pass "-o /dev/null and -o FIFO written in place"

# --- Outputs are private: mode 0600 whatever the umask and whatever they replace. ---
mkdir -m 0755 "$WORK/modes"
(umask 000
 "$BIN/oans-scan" --quiet "$MNT/orig" -o "$WORK/modes/idx"
 "$BIN/oans-plan" --quiet "$WORK/modes/idx" -o "$WORK/modes/plan"
 "$BIN/oans-plan" --format text "$WORK/modes/idx" -o "$WORK/modes/report.txt"
 "$BIN/oans-plan" --format dirs-json "$WORK/modes/idx" -o "$WORK/modes/dirs.json")
for f in idx plan report.txt dirs.json; do
  [ "$(stat -c %a "$WORK/modes/$f")" = 600 ] || fail "$f written with mode $(stat -c %a "$WORK/modes/$f") under umask 000"
done
chmod 0644 "$WORK/modes/idx" "$WORK/modes/plan"
"$BIN/oans-scan" --quiet "$MNT/orig" -o "$WORK/modes/idx"
"$BIN/oans-plan" --quiet "$WORK/modes/idx" -o "$WORK/modes/plan"
for f in idx plan; do
  [ "$(stat -c %a "$WORK/modes/$f")" = 600 ] || fail "$f replacing a 0644 file has mode $(stat -c %a "$WORK/modes/$f")"
done
printf 'precious\n' > "$WORK/victim3"
ln "$WORK/victim3" "$shared/summary.json"  # a hardlink planted where a summary is asked
"$BIN/oans-plan" --quiet --summary-file "$shared/summary.json" "$WORK/modes/idx" -o /dev/null
[ "$(cat "$WORK/victim3")" = precious ] || fail "the summary was written through a planted hardlink"
[ "$(stat -c %a "$shared/summary.json")" = 600 ] || fail "summary file mode $(stat -c %a "$shared/summary.json")"
grep -q '"files"' "$shared/summary.json" || fail "summary file: $(cat "$shared/summary.json")"
pass "indexes, plans, reports and summaries are created 0600, also under umask 000 and over a 0644 file"

# --- A killed run leaves no temporary output. ---
has_open() {  # has_open PID PREFIX: PID has a file open whose path starts with PREFIX
  local fd
  for fd in /proc/"$1"/fd/*; do
    [[ $(readlink "$fd" 2>/dev/null) == "$2"* ]] && return 0
  done
  return 1
}
killed_run() {  # killed_run DIR CMD...: CMD blocks reading a FIFO while its output in DIR is open
  local dir=$1; shift
  mkdir -p "$dir"
  rm -f "$WORK/block"
  mkfifo "$WORK/block"
  "$@" &
  local pid=$!
  # Up to 30 s for a loaded machine; it is usually a few ms.
  for _ in $(seq 1 600); do
    has_open "$pid" "$dir/" && break
    sleep 0.05
  done
  has_open "$pid" "$dir/" || fail "$*: its output was never opened"
  kill -9 $pid
  wait $pid 2>/dev/null || true
  [ -z "$(ls -A "$dir")" ] || fail "$* killed: left behind $(ls -A "$dir")"
  pass "kill -9 of $(basename "$1") while writing leaves nothing in its directory"
}
killed_run "$WORK/out-plan" "$BIN/oans-plan" --quiet "$WORK/block" -o "$WORK/out-plan/plan"
killed_run "$WORK/out-scan" "$BIN/oans-scan" --quiet --previous "$WORK/block" "$MNT/orig" -o "$WORK/out-scan/idx"
killed_run "$WORK/list-tmp" "$BIN/oans-plan" --quiet --temp-dir "$WORK/list-tmp" --from-list "$WORK/block" \
  -o "$WORK/out-list.plan"
[ ! -e "$WORK/out-list.plan" ] || fail "oans-plan --from-list killed: left its plan"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"

# --- apply refuses plans and journals that another user could have written. ---
plans=$WORK/plans
mkdir -m 0700 "$plans"
cp "$WORK/plan" "$plans/p"
chmod 0644 "$plans/p"
chown nobody "$plans/p"
expect_refused "owned by uid 65534" "$BIN/oans-apply" "$plans/p"
chown root "$plans/p"
chmod 0666 "$plans/p"
expect_refused "writable by other users (mode 0666)" "$BIN/oans-apply" "$plans/p"
chmod 0644 "$plans/p"
mkdir -m 0777 "$WORK/open"
cp -p "$plans/p" "$WORK/open/p"
expect_refused "the directory $WORK/open above it is writable by other users (mode 0777, no sticky bit)" \
  "$BIN/oans-apply" "$WORK/open/p"
grep -q "install -d -m 0700" "$WORK/err" || fail "no advice on where to keep plans: $(cat "$WORK/err")"
printf 'precious\n' > "$WORK/victim2"
ln -s "$WORK/victim2" "$plans/p.journal"
expect_refused "journal $plans/p.journal: it is a symbolic link" "$BIN/oans-apply" "$plans/p"
[ "$(cat "$WORK/victim2")" = precious ] || fail "the journal's symlink target was written"
rm "$plans/p.journal"
printf 'oans-journal 1 plan-created 1 rounds 1\n' > "$plans/p.journal"
chmod 0666 "$plans/p.journal"
expect_refused "writable by other users" "$BIN/oans-apply" "$plans/p"
chmod 0600 "$plans/p.journal"
chown nobody "$plans/p.journal"
expect_refused "owned by uid 65534" "$BIN/oans-apply" "$plans/p"
rm "$plans/p.journal"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed by a refused apply"
# Standard input stays allowed (nothing on disk to replace).
"$BIN/oans-apply" --quiet --dry-run - < "$WORK/open/p" > /dev/null
pass "a plan on standard input is read"
# A root-owned 0644 plan in a sticky shared directory (as /tmp) is trusted; so is its journal.
cp "$WORK/plan" "$shared/p"
chmod 0644 "$shared/p"
"$BIN/oans-apply" --quiet "$shared/p"
[ "$(stat -c '%u %a' "$shared/p.journal")" = "0 600" ] || fail "journal: $(stat -c '%u %a' "$shared/p.journal")"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/copy" 4096)" ] || fail "not deduped: $(unshared_files "$MNT/copy" 4096)"
pass "a root plan in a sticky directory is applied, contents unchanged, journal private"

# --- Reports: a newline in a name cannot add a line. ---
mkdir "$MNT/nl"
rand_file "$MNT/nl/plain" 20000 5
cp --reflink=never "$MNT/nl/plain" "$MNT/nl/$(printf 'evil\nINJECTED')"
cp --reflink=never "$MNT/nl/plain" "$MNT/nl/back\\slash"
sync
before_nl=$(checksums "$MNT/nl")
"$BIN/oans-scan" --quiet "$MNT/nl" -o "$WORK/nl.idx"
"$BIN/oans-plan" --format text "$WORK/nl.idx" -o "$WORK/nl.txt"
grep -qxF "  $MNT/nl/evil\\nINJECTED" "$WORK/nl.txt" || fail "text report: $(cat "$WORK/nl.txt")"
grep -qxF "  $MNT/nl/back\\\\slash" "$WORK/nl.txt" || fail "text report: $(cat "$WORK/nl.txt")"
grep -q "^INJECTED" "$WORK/nl.txt" && fail "text report has an injected line"
set +e
"$BIN/oans-plan" --format fdupes "$WORK/nl.idx" > "$WORK/nl.fdupes" 2> "$WORK/nl.err"
rc=$?
set -e
[ $rc = 1 ] || fail "fdupes report with a newline name exited $rc"
grep -q "left out of the fdupes list.*evil\\\\nINJECTED" "$WORK/nl.err" || fail "fdupes: $(cat "$WORK/nl.err")"
[ "$(grep -c . "$WORK/nl.fdupes")" = 2 ] || fail "fdupes list: $(cat "$WORK/nl.fdupes")"
grep -q "INJECTED" "$WORK/nl.fdupes" && fail "fdupes list names the newline file"
"$BIN/oans-diff" "$WORK/idx" "$WORK/nl.idx" > "$WORK/nl.diff" 2>/dev/null
grep -qxF "added $MNT/nl/evil\\nINJECTED" "$WORK/nl.diff" || fail "diff: $(cat "$WORK/nl.diff")"
grep -q "^INJECTED" "$WORK/nl.diff" && fail "diff output has an injected line"
[ "$before_nl" = "$(checksums "$MNT/nl")" ] || fail "contents changed"
before=$(checksums "$MNT")
pass "text and diff reports escape newlines; the fdupes list leaves such names out"

# --- --until: a missed window is refused, a dated one is taken. ---
late=$(date -d '-2 minutes' +%H:%M)
expect_refused "give the date" "$BIN/oans-apply" --until "$late" "$shared/p"
"$BIN/oans-apply" --quiet --until "$(date -d '+1 day' '+%Y-%m-%d %H:%M')" "$shared/p"
pass "--until with a date a day ahead runs"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
