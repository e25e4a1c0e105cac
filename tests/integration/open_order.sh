#!/usr/bin/env bash
# On a spinning disk the scan's walk stats a directory's entries in inode order, and
# apply opens a round's files in inode order, not in the plan's order (by data offset):
# the inode reads then sweep the inode tables once. The test's directory entries and
# data are laid out in other orders (checked with readdir and FIEMAP); the calls are
# traced with strace. Every file's content, owner and mode stay as they were.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v strace >/dev/null || { echo "strace missing (scripts/install-deps)"; exit 77; }
# LeakSanitizer cannot run under ptrace: leaks are looked for by the other tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mkfs_mount ext4 256M
python3 - "$MNT" <<'PY'
import os, random, sys
m, r = sys.argv[1], random.Random(38)
os.makedirs(f"{m}/a")
names = [f"{m}/a/f{i:02}.bin" for i in range(30)]
for p in names:  # inodes in name order
    open(p, "wb").close()
for i, p in reversed(list(enumerate(names))):  # data in the reverse order
    with open(p, "wb") as f:
        f.write(r.randbytes(20000 + 4096 * i))
        f.flush()
        os.fsync(f.fileno())
    os.chown(p, 1000 + i % 2, 100)
    os.chmod(p, (0o640, 0o600, 0o644)[i % 3])
PY
# s: files of unique sizes whose directory entries are not in inode order (made in c,
# moved into s shuffled), for the scan's walk.
python3 - "$MNT" <<'PY'
import os, random, sys
m, r = sys.argv[1], random.Random(39)
os.makedirs(f"{m}/c")
os.makedirs(f"{m}/s")
names = [f"s{i:02}.dat" for i in range(20)]
for i, n in enumerate(names):  # inodes in name order
    with open(f"{m}/c/{n}", "wb") as f:
        f.write(r.randbytes(1000 + 7 * i))
r.shuffle(names)
for n in names:
    os.rename(f"{m}/c/{n}", f"{m}/s/{n}")
os.rmdir(f"{m}/c")
PY
cp -a "$MNT/a" "$MNT/b"
sync
before=$(checksums "$MNT")
owners() { (cd "$MNT" && find . -type f -printf '%p %U %G %m\n' | sort); }
owners_before=$(owners)
(cd "$MNT" && find . -type f -printf '%p %i\n') > "$WORK/inodes"

# The premise: the data's order is not the inode order.
python3 - "$MNT/a" <<'PY' || fail "the test's files lie in inode order (FIEMAP): it proves nothing"
import fcntl, os, struct, sys
def first(p):
    buf = bytearray(32 + 56)
    struct.pack_into("=QQIIII", buf, 0, 0, 2**64 - 1, 1, 0, 1, 0)
    fd = os.open(p, os.O_RDONLY)
    fcntl.ioctl(fd, 0xC020660B, buf, True)
    os.close(fd)
    return struct.unpack_from("=Q", buf, 40)[0]
d = sys.argv[1]
names = sorted(os.listdir(d), key=lambda n: os.stat(f"{d}/{n}").st_ino)
phys = [first(f"{d}/{n}") for n in names]
assert phys != sorted(phys), phys  # else plan order and inode order agree
PY

# The scan's walk on a spinning disk stats each directory's entries in inode order.
python3 -c 'import os, sys; i = [os.stat(f"{sys.argv[1]}/{n}").st_ino for n in os.listdir(sys.argv[1])]; assert i != sorted(i), i' \
  "$MNT/s" || fail "the entries of s are listed in inode order: the walk's order proves nothing"
strace -f -e trace=statx -o "$WORK/scan.trace" \
  "$BIN/oans-scan" --quiet --storage=hdd --whole-files-only -o "$WORK/idx" "$MNT" || fail "scan"
python3 - "$WORK/scan.trace" "$MNT/s" <<'PY' || fail "the walk stats out of inode order"
import os, re, sys
trace, d = sys.argv[1:]
order = [os.stat(f"{d}/{m.group(1)}").st_ino for line in open(trace)
         for m in [re.search(r'statx\(\d+, "(s\d\d\.dat)"', line)] if m]
print(f"{len(order)} entries of s stat'ed, inodes in that order: {order[:8]} ...")
assert len(order) == 20, order
assert order == sorted(order), order
PY
pass "the walk stats a directory's entries in inode order"
"$BIN/oans-plan" --quiet -o "$WORK/plan" "$WORK/idx" || fail "plan"
strace -f -e trace=openat2 -o "$WORK/apply.trace" \
  "$BIN/oans-apply" --quiet --storage=hdd --link=hard --journal "$WORK/journal" "$WORK/plan" \
  || fail "apply --link=hard"
python3 - "$WORK/apply.trace" "$WORK/inodes" "$MNT" <<'PY' || fail "opens out of inode order"
import re, sys
trace, inodes, mnt = sys.argv[1:]
ino = {}
for line in open(inodes):
    path, i = line.rsplit(" ", 1)
    ino[mnt + path[1:]] = int(i)
seen, order = set(), []
for line in open(trace):
    m = re.search(r'openat2\(AT_FDCWD, "([^"]+\.bin)"', line)
    if m and m.group(1) in ino and m.group(1) not in seen:
        seen.add(m.group(1))
        order.append(ino[m.group(1)])
print(f"{len(order)} files opened, inodes in the order opened: {order[:8]} ...")
assert len(order) == 60, order
assert order == sorted(order), order
PY
pass "a round's files opened in inode order"

for i in $(seq -w 0 29); do
  [ "$(stat -c %i "$MNT/a/f$i.bin")" = "$(stat -c %i "$MNT/b/f$i.bin")" ] || fail "f$i.bin not linked"
done
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ "$owners_before" = "$(owners)" ] || fail "owners or modes changed: $(diff <(echo "$owners_before") <(owners))"
pass "every duplicate linked; contents, owners and modes unchanged"
