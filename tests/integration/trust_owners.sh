#!/usr/bin/env bash
# Sharing data never widens what a user can reach, split a file in two, or tell one user
# what another user's file holds. On ext4, hardlink mode: a user's file and its copy in a
# directory she cannot reach are not linked (nor a private copy of a public file), two
# copies in one private directory are; a destination with other names, copies with another
# mtime and an immutable source are not linked. On btrfs, --same-owner keeps one user's
# guesses from sharing extents with another user's secret. Two unprivileged users (uids
# 2001 and 2002) act through setpriv; every file's content, owner and mode is checked.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed"; exit 77; }
as_user() { local u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
meta() { (cd "$1" && find . -type f -printf '%u %g %m %p\n' | sort); }

mkfs_mount ext4 256M
chmod 0755 "$WORK" "$MNT"  # the users reach the test tree (the work directory is 0700)
T=$MNT/t
mkdir -p "$T"
chmod 0755 "$T"
# Alice (2001): her notes, and root's backup of them in a 0700 directory.
install -d -o 2001 -g 2001 -m 0755 "$T/home/alice"
rand_file "$T/home/alice/notes.txt" 100000 1
chown 2001:2001 "$T/home/alice/notes.txt"
install -d -m 0700 "$T/backup"
cp -a "$T/home/alice" "$T/backup/alice"
# Bob (2002): a public document and his private copy of it.
install -d -o 2002 -g 2002 -m 0755 "$T/pub" "$T/home/bob"
install -d -o 2002 -g 2002 -m 0700 "$T/home/bob/private"
rand_file "$T/pub/doc" 100000 2
chown 2002:2002 "$T/pub/doc"
cp -a "$T/pub/doc" "$T/home/bob/private/doc"
# Two copies inside one private directory: the same users reach both.
install -d -o 2002 -g 2002 -m 0755 "$T/home/bob/private/sub"
rand_file "$T/home/bob/private/x" 100000 3
chown 2002:2002 "$T/home/bob/private/x"
cp -a "$T/home/bob/private/x" "$T/home/bob/private/sub/x"
# Files with other names: nl/a and out/a2 are one file, nl/b and out/b2 another.
mkdir -p "$T/nl" "$T/out"
rand_file "$T/nl/a" 100000 4
cp -a "$T/nl/a" "$T/nl/b"
ln "$T/nl/a" "$T/out/a2"
ln "$T/nl/b" "$T/out/b2"
# Copies with another mtime.
mkdir -p "$T/mt"
rand_file "$T/mt/a" 100000 5
cp "$T/mt/a" "$T/mt/b"
touch -d '2020-01-01' "$T/mt/b"
# An immutable source: imm/a has two names (so the planner makes it the source).
mkdir -p "$T/imm"
rand_file "$T/imm/a" 100000 6
cp -a "$T/imm/a" "$T/imm/b"
ln "$T/imm/a" "$T/imm/a-link"
chattr +i "$T/imm/a"
sync
before=$(checksums "$MNT")
meta_before=$(meta "$T")

"$BIN/oans-scan" --quiet "$T/home" "$T/backup" "$T/pub" "$T/nl" "$T/mt" "$T/imm" -o "$WORK/idx"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx" -o "$WORK/plan"
set +e
"$BIN/oans-apply" --link=hard --journal "$WORK/journal" "$WORK/plan" > "$WORK/apply.out" 2> "$WORK/apply.err"
rc=$?
set -e
cat "$WORK/apply.err"
[ $rc = 1 ] || fail "expected exit 1 (pairs left alone), got $rc"
ino() { stat -c %i "$1"; }
same() { [ "$(ino "$1")" = "$(ino "$2")" ]; }
same "$T/home/alice/notes.txt" "$T/backup/alice/notes.txt" && fail "alice's notes were linked to root's private backup"
same "$T/pub/doc" "$T/home/bob/private/doc" && fail "a public file was linked to a private copy"
grep -q "notes.txt: not linked, other users can reach its source than can reach it" "$WORK/apply.err" ||
  fail "the reach refusal is not reported"
same "$T/home/bob/private/x" "$T/home/bob/private/sub/x" || fail "two copies in one private directory were not linked"
same "$T/nl/a" "$T/nl/b" && fail "a file with other names was split"
grep -q "not linked, has other hardlinks" "$WORK/apply.err" || fail "the split refusal is not reported"
same "$T/mt/a" "$T/mt/b" && fail "copies with another mtime were linked"
grep -q "another mtime" "$WORK/apply.err" || fail "the mtime refusal is not reported"
same "$T/imm/a" "$T/imm/b" && fail "a file was linked to an immutable source"
grep -q "its source is immutable or append-only" "$WORK/apply.err" || fail "the immutable refusal is not reported"
pass "hardlink mode: reach, other names, mtime and immutable sources refused; one private directory linked"

# What the refusals protect: alice writes her notes; the backup keeps the old content.
as_user 2001 sh -c "echo 'new line' >> '$T/home/alice/notes.txt'"
before=$(echo "$before" | grep -v "home/alice/notes.txt'")
[ "$before" = "$(checksums "$MNT" | grep -v "home/alice/notes.txt'")" ] || fail "contents changed"
[ "$meta_before" = "$(meta "$T")" ] || fail "owners or modes changed: $(diff <(echo "$meta_before") <(meta "$T"))"
[ "$(stat -c %h "$T/nl/b")" = 2 ] && [ "$(stat -c %h "$T/nl/a")" = 2 ] || fail "link counts changed"
pass "contents, owners, modes and link counts unchanged"

# Relaxed explicitly, reach no longer keeps the backup apart (and the user could then
# write into root's backup: that is what the option says).
chattr -i "$T/imm/a"
cp -a "$T/backup/alice/notes.txt" "$T/home/alice/notes.txt"
"$BIN/oans-scan" --quiet "$T/home" "$T/backup" -o "$WORK/idx2"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx2" -o "$WORK/plan2"
"$BIN/oans-apply" --quiet --link=hard --link-relax=reach --journal "$WORK/journal2" "$WORK/plan2"
same "$T/home/alice/notes.txt" "$T/backup/alice/notes.txt" || fail "--link-relax=reach did not link"
pass "--link-relax=reach links what reach kept apart"

# A bind mount reaches a directory without the directories above it: carol's public page
# and the private draft beside it share her 0700 home, but the web server's bind mount
# lets everyone read the page. Their paths cannot tell who reaches them: not linked.
install -d -o 2003 -g 2003 -m 0700 "$T/home/carol"
install -d -o 2003 -g 2003 -m 0755 "$T/home/carol/public" "$T/home/carol/notes"
rand_file "$T/home/carol/public/index.txt" 100000 7
chown 2003:2003 "$T/home/carol/public/index.txt"
cp -a "$T/home/carol/public/index.txt" "$T/home/carol/notes/draft.txt"
mkdir -p "$WORK/www"
mount --bind "$T/home/carol/public" "$WORK/www"
MOUNTS+=("$WORK/www")
"$BIN/oans-scan" --quiet "$T/home/carol" -o "$WORK/idx3"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx3" -o "$WORK/plan3"
set +e
"$BIN/oans-apply" --link=hard --journal "$WORK/journal3" "$WORK/plan3" 2> "$WORK/apply3.err"; rc=$?
set -e
cat "$WORK/apply3.err"
[ $rc = 1 ] || fail "expected exit 1 with a bind mount, got $rc"
same "$T/home/carol/public/index.txt" "$T/home/carol/notes/draft.txt" && fail "a bind-mounted page was linked to a private draft"
grep -q "who can reach it cannot be decided (its filesystem is mounted more than once" "$WORK/apply3.err" ||
  fail "the bind mount refusal is not reported"
umount "$WORK/www"
unset 'MOUNTS[${#MOUNTS[@]}-1]'
pass "a file system with a directory bind-mounted elsewhere: reach cannot be decided, nothing linked"

# --- btrfs, reflink: --same-owner keeps another user's guesses from sharing extents. ---
mkfs_mount btrfs 256M
chmod 0755 "$MNT"
S=$MNT/share
install -d -m 0755 "$S"
install -d -o 2001 -g 2001 -m 0700 "$S/alice"
install -d -o 2002 -g 2002 -m 0755 "$S/bob"
pad() { python3 -c "import sys; sys.stdout.write(('PIN=' + sys.argv[1] + '\n').ljust(16384, '.'))" "$1"; }
pad 4711 > "$S/alice/secret"; chown 2001:2001 "$S/alice/secret"; chmod 0600 "$S/alice/secret"
for g in 0000 1234 4711 9999; do as_user 2002 sh -c "$(declare -f pad); pad $g > '$S/bob/guess-$g'"; done
sync
before=$(checksums "$MNT")
meta_before=$(meta "$S")
"$BIN/oans-scan" --quiet "$S" -o "$WORK/s.idx"
"$BIN/oans-plan" --json "$WORK/s.idx" -o "$WORK/s-any.plan" > "$WORK/s-any.json" 2>&1
"$BIN/oans-plan" --json --same-owner "$WORK/s.idx" -o "$WORK/s.plan" > "$WORK/s.json" 2>&1
groups() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['whole_file_groups'])" "$1"; }
[ "$(groups "$WORK/s-any.json")" = 1 ] || fail "without --same-owner the guess should pair: $(cat "$WORK/s-any.json")"
[ "$(groups "$WORK/s.json")" = 0 ] || fail "--same-owner paired files of two owners: $(cat "$WORK/s.json")"
"$BIN/oans-apply" --quiet "$WORK/s.plan"
[ -n "$(unshared_files "$S/alice" 4096)" ] || fail "alice's secret shares an extent"
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ "$meta_before" = "$(meta "$S")" ] || fail "owners or modes changed"
pass "--same-owner: another owner's matching guess shares nothing with the secret"
