# shellcheck shell=bash
# Shared helpers for integration tests: loop-mounted filesystem images that are always
# cleaned up (mounts, loop devices, temp dirs), content checksums, and checks against the
# filesystem's own accounting. Source it; call `it_init BIN_DIR`.
set -euo pipefail

it_init() {
  BIN=$(cd "$1" && pwd)
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: integration tests need root (loop devices and mounts); CI runs them as root"
    exit 77
  fi
  for t in losetup mount python3; do
    command -v "$t" >/dev/null || { echo "SKIP: $t not installed (run scripts/install-deps)"; exit 77; }
  done
  WORK=$(mktemp -d /var/tmp/oans-it.XXXXXX)
  MOUNTS=()
  LOOPS=()
  trap it_cleanup EXIT
  trap 'exit 130' INT TERM
}

it_cleanup() {
  local rc=$?
  set +e
  local i
  for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do
    umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null
  done
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
  rm -rf "$WORK"
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then echo "FAILED (exit $rc)"; fi
  exit $rc
}

# mkfs_mount KIND SIZE [NAME]: sets MNT to the mount point. KIND: btrfs, btrfs-zstd, xfs,
# xfs-noreflink, ext4. NAME (default KIND) names the image and mount point, for a second
# one of a kind.
# (Not called through $(...): the cleanup lists must live in this shell.)
mkfs_mount() {
  local kind=$1 size=$2 name=${3:-$1} img mnt loop
  img=$WORK/$name.img
  mnt=$WORK/mnt-$name
  mkdir -p "$mnt"
  truncate -s "$size" "$img"
  case $kind in
    btrfs|btrfs-zstd) mkfs.btrfs -q -f "$img" >/dev/null ;;
    btrfs-mixed) mkfs.btrfs -q -f --mixed "$img" >/dev/null ;;
    xfs) mkfs.xfs -q -f -m reflink=1 "$img" >/dev/null ;;
    xfs-noreflink) mkfs.xfs -q -f -m reflink=0 "$img" >/dev/null ;;
    ext4) mkfs.ext4 -q -F "$img" >/dev/null ;;
  esac
  loop=$(losetup -f --show "$img")
  LOOPS+=("$loop")
  if [ "$kind" = btrfs-zstd ]; then mount -o compress=zstd "$loop" "$mnt"; else mount "$loop" "$mnt"; fi
  MOUNTS+=("$mnt")
  MNT=$mnt
}

# Deterministic pseudo-random bytes: rand_file PATH SIZE SEED
rand_file() {
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
with open(path, "wb") as f:
    left = size
    while left > 0:
        n = min(left, 1 << 20)
        f.write(r.randbytes(n))
        left -= n
PY
}

# A sample tree with small, medium, large, sparse, hardlinked and symlinked files.
make_tree() {
  local d=$1
  python3 - "$d" <<'PY'
import os, random, sys
d = sys.argv[1]
def rand(path, size, seed):
    r = random.Random(seed)
    with open(path, "wb") as f:
        while size > 0:
            n = min(size, 1 << 20)
            f.write(r.randbytes(n))
            size -= n
for sub in ("src/sub", "media", "tiny"):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
for i in range(1, 41):
    rand(f"{d}/src/file{i}.bin", i * 5000, i)
for i in range(1, 11):
    rand(f"{d}/src/sub/part{i}.dat", i * 70001, 100 + i)
rand(f"{d}/media/big1.bin", 8 << 20, 7)
rand(f"{d}/media/big2.bin", (3 << 20) + 12345, 8)
for i in range(1, 21):
    with open(f"{d}/tiny/t{i}.txt", "w") as f:
        f.write(f"tiny file {i}\n")
with open(f"{d}/media/sparse.img", "wb") as f:
    f.truncate(64 << 20)
    f.seek(20 << 20)
    f.write(random.Random(9).randbytes(1 << 20))
os.link(f"{d}/src/file1.bin", f"{d}/src/file1.hardlink")
os.symlink("file2.bin", f"{d}/src/file2.symlink")
os.symlink("/etc/passwd", f"{d}/src/outside.symlink")
PY
}

# tree_and_copy: MNT/orig holds the sample tree and MNT/copy a non-reflinked copy of it.
tree_and_copy() {
  make_tree "$MNT/orig"
  cp -a --reflink=never "$MNT/orig" "$MNT/copy"
  sync
}

# checksums DIR -> "sha256  relative/path" lines, sorted. Works for paths longer than
# PATH_MAX and reads only the data of sparse files: zero blocks and holes hash alike.
checksums() {
  python3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
out = []
zero = bytes(1 << 16)
for dirpath, dirs, files, dfd in os.fwalk(root, follow_symlinks=False):
    for name in files:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            continue
        h = hashlib.sha256(str(st.st_size).encode())
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
        try:
            pos = 0
            while pos < st.st_size:
                try:
                    pos = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:
                    break
                end = os.lseek(fd, pos, os.SEEK_HOLE)
                while pos < end:
                    chunk = os.pread(fd, min(1 << 16, end - pos), pos)
                    if not chunk:
                        break
                    if chunk != zero[:len(chunk)]:
                        h.update(pos.to_bytes(8, "little") + chunk)
                    pos += len(chunk)
        finally:
            os.close(fd)
        rel = os.path.relpath(os.path.join(dirpath, name), root)
        out.append(h.hexdigest() + "  " + repr(rel))
print("\n".join(sorted(out)))
PY
}

# exclusive_bytes PATH -> bytes only PATH holds (btrfs filesystem du)
exclusive_bytes() {
  btrfs filesystem du -s --raw "$1" | awk 'NR==2 {print $2}'
}
# data_used MNT -> bytes of data extents allocated on the btrfs at MNT, once its
# transactions are on disk (what deduplication actually frees; `btrfs filesystem du`
# counts only the extents files still reference)
data_used() {
  btrfs filesystem sync "$1" >/dev/null
  btrfs filesystem df -b "$1" | awk -F'used=' '/^Data/ {print $2+0}'
}
# df_used MNT -> bytes df calls used (data, and metadata with its copies), once the
# filesystem's transactions are on disk: what oans-apply's net_freed_bytes measures
df_used() {
  if [ "$(stat -f -c %T "$1")" = btrfs ]; then btrfs filesystem sync "$1" >/dev/null; else sync -f "$1"; fi
  df -B1 --output=used "$1" | tail -1 | tr -d ' '
}
# within A B PERCENT: whether A is within PERCENT percent of B (B not 0)
within() {
  python3 -c 'import sys; a, b, p = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= abs(b) * p / 100 else 1)' "$@"
}
# json_field FILE KEY: KEY of the last JSON object line of FILE (a tool's --json, among
# its notices)
json_field() {
  python3 -c 'import json,sys
line = [l for l in open(sys.argv[1]) if l.startswith("{")][-1]
print(json.loads(line)[sys.argv[2]])' "$@"
}
# snapshot_tree DIR SMALL BIG: DIR holds SMALL files of 3-12 KiB of random bytes, a
# hundred to a folder, and BIG files of 48 MiB (the same ones for the same arguments)
snapshot_tree() {
  python3 - "$@" <<'PY'
import os, random, sys
d, small, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(35)
for i in range(small):
    sub = os.path.join(d, "src", "d%03d" % (i // 100))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%05d.c" % i), "wb") as f:
        f.write(r.randbytes(r.randint(3 << 10, 12 << 10)))
os.makedirs(os.path.join(d, "media"), exist_ok=True)
for i in range(big):
    with open(os.path.join(d, "media", "big%d.bin" % i), "wb") as f:
        for _ in range(48):
            f.write(r.randbytes(1 << 20))
PY
}
total_bytes() {
  btrfs filesystem du -s --raw "$1" | awk 'NR==2 {print $1}'
}

# unshared_files DIR MINSIZE -> files of at least MINSIZE bytes with an extent not marked SHARED
unshared_files() {
  python3 - "$1" "$2" <<'PY'
import fcntl, os, struct, sys
FS_IOC_FIEMAP = 0xC020660B
SHARED, LAST, UNWRITTEN = 0x2000, 0x1, 0x800
def extents(path):
    out, start = [], 0
    with open(path, "rb") as f:
        while True:
            hdr = struct.pack("=QQIIII", start, 0xFFFFFFFFFFFFFFFF - start, 1, 0, 64, 0)
            buf = bytearray(hdr + b"\0" * (56 * 64))
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf)
            n = struct.unpack_from("=I", buf, 20)[0]
            if n == 0:
                return out
            last = False
            for i in range(n):
                lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", buf, 32 + 56 * i)
                out.append((lo, ph, ln, fl))
                last |= bool(fl & LAST)
            if last:
                return out
            start = out[-1][0] + out[-1][2]
bad = 0
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        p = os.path.join(root, name)
        if os.path.islink(p) or os.path.getsize(p) < int(sys.argv[2]):
            continue
        ex = extents(p)
        # Unwritten (preallocated) extents read as zeros and hold no data to share.
        ex = [e for e in ex if not (e[3] & UNWRITTEN)]
        if not ex or any(not (fl & SHARED) for _, _, _, fl in ex):
            print(p)
            bad += 1
sys.exit(0)
PY
}

# plan_many_rounds: a btrfs image with the sample tree and its copy, `before` set to the
# checksums, $WORK/idx scanned and $WORK/plan planned in 1 MiB rounds (statistics in
# $WORK/plan.json); `rounds` is set to their number, at least 10.
plan_many_rounds() {
  mkfs_mount btrfs 512M
  tree_and_copy
  before=$(checksums "$MNT")
  "$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx"
  "$BIN/oans-plan" --json --round-size 1M "$WORK/idx" -o "$WORK/plan" > "$WORK/plan.json" 2>&1
  rounds=$(python3 -c "import json; print(json.load(open('$WORK/plan.json'))['rounds'])")
  [ "$rounds" -ge 10 ] || fail "expected at least 10 rounds, got $rounds"
}

# stop_then_resume [APPLY OPTION...]: after plan_many_rounds, applies $WORK/plan with a
# 2 s deadline and a slow read rate (exit 3 expected, some rounds done, contents kept),
# then again to the end; the second run takes the finished rounds from the journal and
# the journal holds every round exactly once. Sets `done1` (rounds of the first run).
stop_then_resume() {
  set +e
  "$BIN/oans-apply" --json "$@" --deadline 2s --max-rate 4M "$WORK/plan" > "$WORK/run1.json" 2> "$WORK/run1.err"
  local rc=$?
  set -e
  cat "$WORK/run1.err"
  [ $rc = 3 ] || fail "expected exit 3 (stopped early), got $rc"
  done1=$(python3 -c "import json; print(json.load(open('$WORK/run1.json'))['rounds_done'])")
  [ "$done1" -gt 0 ] && [ "$done1" -lt "$rounds" ] || fail "first run did $done1 of $rounds rounds"
  [ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
  "$BIN/oans-apply" --json "$@" "$WORK/plan" > "$WORK/run2.json" 2> "$WORK/run2.err"
  cat "$WORK/run2.err"
  python3 - "$WORK/run2.json" "$done1" "$rounds" <<'PY' || fail "second run: $(cat "$WORK/run2.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rounds_from_journal"] == int(sys.argv[2]), s
assert s["rounds_done"] + s["rounds_from_journal"] == int(sys.argv[3]), s
assert s["bytes_skipped"] == 0 and s["errors"] == 0, s
PY
  python3 - "$WORK/plan.journal" "$rounds" <<'PY' || fail "journal: $(cat "$WORK/plan.journal")"
import sys
lines = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
done = [int(l[1]) for l in lines]
assert sorted(done) == list(range(int(sys.argv[2]))), done   # every round exactly once
PY
}

# settle: waits until the files written so far are more than a second old, so that a
# scan begun now records them settled and the next one may reuse their records (a
# record whose ctime lies within a second before its scan began is read again:
# Settled in lib/format/index_file.h).
settle() { sleep 1.1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
