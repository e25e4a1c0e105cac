#!/usr/bin/env bash
# Hardlink mode never hands one user's file to another and never drops a writer's data:
# on ext4, identical files that differ in owner, group, permissions, extended attributes
# or ACLs are not linked (unless relaxed explicitly), setuid/setgid files never are, and a
# file held open for writing by another process is left alone, its writer's later writes
# kept. Every file's content, owner and mode are checked before and after.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount ext4 256M
T=$MNT/t
mkdir -p "$T/root" "$T/home/user" "$T/bin" "$T/acl" "$T/xattr" "$T/group" "$T/same" "$T/busy"
chmod 0755 "$T/root"
rand_file "$T/root/secret.sh" 300000 1
# The attacker's copy of root's private script is placed first, so it is the earlier on disk.
rand_file "$T/home/user/copy.sh" 300000 1
cp --reflink=never "$T/home/user/copy.sh" "$T/root/secret.sh"
chown nobody:nogroup "$T/home/user/copy.sh"; chmod 0666 "$T/home/user/copy.sh"
chmod 0700 "$T/root/secret.sh"
for f in a b; do rand_file "$T/bin/$f" 200000 2; chmod 4755 "$T/bin/$f"; done
for f in a b; do rand_file "$T/acl/$f" 200000 3; chmod 0640 "$T/acl/$f"; done
setfacl -m u:nobody:r "$T/acl/b"
for f in a b; do rand_file "$T/xattr/$f" 200000 4; done
python3 -c "import os; os.setxattr('$T/xattr/b', 'user.origin', b'upload')"
for f in a b; do rand_file "$T/group/$f" 200000 5; done
chgrp nogroup "$T/group/b"
for f in a b; do rand_file "$T/same/$f" 200000 6; done
for f in a b; do rand_file "$T/busy/$f" 200000 7; done
for d in bin acl xattr group same busy; do touch -r "$T/$d/a" "$T/$d/b"; done  # equal mtimes
touch -r "$T/root/secret.sh" "$T/home/user/copy.sh"
sync
before=$(checksums "$MNT")
meta() { (cd "$T" && find . -type f -printf '%u %g %m %p\n' | sort); }
meta_before=$(meta)

"$BIN/oans-scan" --quiet "$T" -o "$WORK/idx"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx" -o "$WORK/plan"

# A process holds busy/b open for writing during the whole apply and writes afterwards.
mkfifo "$WORK/go"
python3 - "$T/busy/b" "$WORK/go" "$WORK/ready" <<'PY' &
import sys
f = open(sys.argv[1], "ab")
open(sys.argv[3], "w").close()    # open for writing now
open(sys.argv[2]).read()          # until apply is over
f.write(b"written after the apply"); f.close()
PY
writer=$!
for _ in $(seq 600); do [ -e "$WORK/ready" ] && break; sleep 0.1; done  # up to 60 s on a loaded machine
[ -e "$WORK/ready" ] || fail "the writer did not start"
set +e
"$BIN/oans-apply" --link=hard --journal "$WORK/journal" "$WORK/plan" 2> "$WORK/apply.err"; rc=$?
set -e
echo go > "$WORK/go"; wait $writer
cat "$WORK/apply.err"
[ $rc = 1 ] || fail "expected exit 1 (files left alone), got $rc"

ino() { stat -c %i "$1"; }
[ "$(ino "$T/same/a")" = "$(ino "$T/same/b")" ] || fail "identical files with the same metadata were not linked"
for d in bin acl xattr group busy; do
  [ "$(ino "$T/$d/a")" != "$(ino "$T/$d/b")" ] || fail "$d/a and $d/b were linked"
done
[ "$(ino "$T/root/secret.sh")" != "$(ino "$T/home/user/copy.sh")" ] || fail "root's script was linked to the user's copy"
grep -q "setuid or setgid" "$WORK/apply.err" || fail "setuid refusal not reported"
grep -q "another owner" "$WORK/apply.err" || fail "owner refusal not reported"
grep -q "another group" "$WORK/apply.err" || fail "group refusal not reported"
grep -q "extended attributes or ACLs" "$WORK/apply.err" || fail "xattr/ACL refusal not reported"
grep -q "busy/b: not linked, open for writing by another process" "$WORK/apply.err" || fail "writer not reported"
tail -c 23 "$T/busy/b" | grep -q "written after the apply" || fail "the writer's data is not in busy/b"
after=$(checksums "$MNT" | grep -v "busy/b'")
[ "$(echo "$before" | grep -v "busy/b'")" = "$after" ] || fail "contents changed"
[ "$meta_before" = "$(meta)" ] || fail "owners or modes changed: $(diff <(echo "$meta_before") <(meta))"
[ "$(getfacl -cp "$T/acl/b" | grep -c nobody)" = 1 ] || fail "the ACL of acl/b is gone"
[ -z "$(find "$T" -name '*oans-link*')" ] || fail "a hidden link was left behind"
pass "only files with the same owner, group, mode, xattrs and ACLs are linked; setuid never; a writer keeps its data"

# Relaxed explicitly, the ACL and xattr pairs are linked; setuid files still are not.
"$BIN/oans-scan" --quiet "$T" -o "$WORK/idx2"
"$BIN/oans-plan" --quiet --whole-files-only "$WORK/idx2" -o "$WORK/plan2"
set +e
"$BIN/oans-apply" --link=hard --link-relax=xattrs --journal "$WORK/journal2" "$WORK/plan2" 2> "$WORK/apply2.err"
set -e
[ "$(ino "$T/xattr/a")" = "$(ino "$T/xattr/b")" ] || fail "--link-relax=xattrs did not link xattr/"
[ "$(ino "$T/bin/a")" != "$(ino "$T/bin/b")" ] || fail "setuid files were linked"
[ "$(ino "$T/root/secret.sh")" != "$(ino "$T/home/user/copy.sh")" ] || fail "relaxing xattrs linked other owners"
pass "--link-relax=xattrs links what it says and nothing else"

# Hardlink mode keeps a journal: without one it refuses to start.
set +e
"$BIN/oans-apply" --link=hard --no-journal "$WORK/plan2" 2> "$WORK/nojournal.err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "needs a journal" "$WORK/nojournal.err" || fail "--link=hard --no-journal: rc $rc"
pass "--link=hard without a journal is refused"
