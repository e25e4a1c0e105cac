#!/usr/bin/env bash
# Warm runs that stay warm: on a relatime btrfs of 20,000 files, the scan after a cycle
# that dedupes, and the scan after a "backup" that read every file and directory, each
# make at most 200 + 1 per 100 files of open, stat, getdents and ioctl calls (strace),
# and each index equals a cold scan's, record for record. Both are followed scans: the
# inodes btrfs names are decided from their tree items, not opened.
# Four times: the root a directory, the root a subvolume of its own, and the root a
# directory holding a subvolume and a read-only snapshot of it (then a new snapshot
# taken and the old one deleted); last, a directory of 48,000 files scanned with
# --memory 16M, whose previous records do not fit in one pass of the judge, nor the
# blocks written since in one read-ahead (with --storage=hdd). Each followed scan runs
# again with --storage=ssd, whose judge reads the blocks written since from the device
# itself: the same records.
# WARM_FILES sets the number of files (default 20000), WARM_KINDS which of the four run.
source "$(dirname "$0")/lib.sh"
it_init "$1"
for t in mkfs.btrfs strace; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
# LeakSanitizer cannot run under ptrace: the strace'd scans would abort at exit.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# cat_files INDEX OUT: the file records, sorted, without `reused`, each filesystem named
# by its uuid and subvolume (a followed scan may list them in another order).
cat_files() {
  "$BIN/oans-cat" --blocks "$1" | python3 -c '
import json, sys
out, fs = [], []
for line in sys.stdin:
    j = json.loads(line)
    if j.get("type") == "index-header":
        fs = ["%s/%s" % (f.get("uuid"), f.get("subvolume")) for f in j["filesystems"]]
    if j.get("type") not in ("file", "dir"): continue
    j.pop("reused", None)
    if "fs" in j: j["fs"] = fs[j["fs"]]
    out.append(json.dumps(j, sort_keys=True))
print("\n".join(sorted(out)))' > "$2"
}
# calls STRACE_OUT: open, stat, getdents and ioctl calls counted by strace -c.
calls() {
  awk '$NF ~ /^(open|openat|openat2|stat|lstat|fstat|newfstatat|statx|getdents|getdents64|ioctl)$/ {
         n += ($4 ~ /^[0-9]+$/) ? $4 : $3 } END { print n + 0 }' "$1"
}
# again NAME PREVIOUS STORAGE: the followed scan once more with --storage=STORAGE, into
# NAME-STORAGE.idx and .json; its records must be the cold scan's.
again() {
  local name=$1 prev=$2 kind=$3
  "$BIN/oans-scan" --json --storage="$kind" $SCAN_OPTS --previous "$prev" "$T" -o "$WORK/$name-$kind.idx" \
    > "$WORK/$name-$kind.json" 2>&1 || fail "$name: oans-scan --storage=$kind failed: $(cat "$WORK/$name-$kind.json")"
  cat_files "$WORK/$name-$kind.idx" "$WORK/$name-$kind.txt"
  cmp -s "$WORK/$name-$kind.txt" "$WORK/$name-cold.txt" || fail "$name: records with --storage=$kind differ from a cold scan's:
$(diff "$WORK/$name-cold.txt" "$WORK/$name-$kind.txt" | head -20)"
}
# warm NAME PREVIOUS [MIN_QUIET [MIN_MOVED]]: a followed scan under strace, checked against
# a cold scan; with at least MIN_QUIET files judged unchanged from their items alone (or
# moved), of which MIN_MOVED had only their extents changed.
warm() {
  local name=$1 prev=$2 min_quiet=${3:-0} min_moved=${4:-0} files
  files=$(find "$T" -type f | wc -l)
  budget=$((200 + files / 100))
  if [ -n "${WARM_TRACE:-}" ]; then  # WARM_TRACE=DIR: every call of the scan, for a look
    strace -f -o "$WARM_TRACE/$name.trace" "$BIN/oans-scan" --quiet --previous "$prev" "$T" -o /dev/null
  fi
  strace -f -c -o "$WORK/$name.strace" "$BIN/oans-scan" --json $SCAN_OPTS --previous "$prev" "$T" \
    -o "$WORK/$name.idx" > "$WORK/$name.json" 2>&1 || fail "$name: oans-scan failed: $(cat "$WORK/$name.json")"
  [ "$(json_field "$WORK/$name.json" followed)" = True ] ||
    fail "$name: the scan did not follow btrfs changes: $(grep -v '^{' "$WORK/$name.json" | head -3)"
  local n
  n=$(calls "$WORK/$name.strace")
  "$BIN/oans-scan" --quiet "$T" -o "$WORK/$name-cold.idx"
  cat_files "$WORK/$name.idx" "$WORK/$name.txt"
  cat_files "$WORK/$name-cold.idx" "$WORK/$name-cold.txt"
  cmp -s "$WORK/$name.txt" "$WORK/$name-cold.txt" || fail "$name: records differ from a cold scan's:
$(diff "$WORK/$name-cold.txt" "$WORK/$name.txt" | head -20)"
  echo "$name: $n open/stat/getdents/ioctl calls for $files files (budget $budget); changed inodes $(json_field "$WORK/$name.json" changed_inodes)"
  sed -n '1,2p;/open\|stat\|getdents\|ioctl/p' "$WORK/$name.strace"
  [ "$n" -le "$budget" ] || fail "$name: $n calls, more than $budget"
  local quiet moved
  quiet=$(json_field "$WORK/$name.json" quiet_inodes)
  moved=$(json_field "$WORK/$name.json" extents_moved)
  [ "$quiet" -ge "$min_quiet" ] && [ "$moved" -ge "$min_moved" ] ||
    fail "$name: $quiet files judged from their items ($moved moved), not at least $min_quiet ($min_moved)"
  local passes
  passes=$(json_field "$WORK/$name.json" judge_passes)
  [ "$passes" -ge "$MIN_PASSES" ] || fail "$name: judged in $passes passes, not at least $MIN_PASSES"
  if [ -n "$SCAN_OPTS" ]; then  # the same judged in one pass, with the default --memory
    "$BIN/oans-scan" --json --previous "$prev" "$T" -o "$WORK/$name-one.idx" > "$WORK/$name-one.json" 2>&1 ||
      fail "$name: oans-scan with the default --memory failed"
    local f
    for f in changed_inodes quiet_inodes extents_moved; do
      [ "$(json_field "$WORK/$name.json" $f)" = "$(json_field "$WORK/$name-one.json" $f)" ] ||
        fail "$name: $f $(json_field "$WORK/$name.json" $f) in passes, $(json_field "$WORK/$name-one.json" $f) in one"
    done
    [ "$(json_field "$WORK/$name-one.json" judge_passes)" = 1 ] || fail "$name: the default --memory took more than one pass"
    # On a spinning disk the blocks written since are read ahead; more of them than
    # --memory holds are read a part of the numbers at a time, each part then judged:
    # more than --memory read ahead in all, the same records.
    again "$name" "$prev" hdd
    local ahead parts
    ahead=$(json_field "$WORK/$name-hdd.json" tree_ahead_bytes)
    parts=$(json_field "$WORK/$name-hdd.json" tree_ahead_parts)
    [ "$parts" -ge 1 ] && [ "$ahead" -gt $((16 << 20)) ] ||
      fail "$name: $ahead bytes read ahead with --storage=hdd in $parts parts after the first, not more than --memory"
    echo "$name: $ahead bytes of tree blocks read ahead with --storage=hdd, $parts parts after the first"
  fi
  # On an SSD the judge reads the blocks written since from the device itself: the same
  # records, and nothing searched instead (no other writer races it here).
  again "$name" "$prev" ssd
  local read searched
  read=$(json_field "$WORK/$name-ssd.json" leaves_read)
  searched=$(json_field "$WORK/$name-ssd.json" leaves_searched)
  if [ "$(json_field "$WORK/$name-ssd.json" changed_inodes)" -gt 2048 ]; then
    [ "$read" -gt 0 ] && [ "$searched" = 0 ] ||
      fail "$name: with --storage=ssd $read leaves read from the device, $searched ranges searched instead"
  fi
  echo "$name: with --storage=ssd $read leaves read from the device in $(json_field "$WORK/$name-ssd.json" leaves_read_requests) requests"
  pass "$name: $n calls (at most $budget), $(wc -l < "$WORK/$name.txt") records equal to a cold scan's; $quiet files judged from their items, $moved of them moved, in $passes pass(es)"
}

# make_files DIR N: N files, half of them copies of others, 200 to a directory.
make_files() {
  python3 - "$1" "$2" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
r = random.Random(7)
per_dir = 200
blobs = [r.randbytes(r.choice([1500, 4096, 6000, 12000, 20000])) for _ in range(n // 4)]
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // per_dir), "s%d" % (i % 3))
    os.makedirs(d, exist_ok=True)
    # Half the files repeat another's data: the dedupe rewrites their leaves.
    data = blobs[i % len(blobs)] if i % 2 else r.randbytes(r.choice([3000, 8192, 16384]))
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(data)
PY
}
for KIND in ${WARM_KINDS:-directory subvolume nested passes}; do
  FILES=${WARM_FILES:-20000} SCAN_OPTS="" MIN_PASSES=0
  # A sixteenth of 16 MiB holds 32,768 records in a pass (24 bytes each, and 8 while
  # the highest are dropped): 48,000 take two; all at once, they would take 1.15 MB.
  [ "$KIND" != passes ] || FILES=48000 SCAN_OPTS="--memory=16M" MIN_PASSES=2
  mkfs_mount btrfs 1G "$KIND"
  findmnt -no OPTIONS "$MNT" | grep -q relatime || fail "the test mount is not relatime: $(findmnt -no OPTIONS "$MNT")"
  T=$MNT/tree
  case $KIND in
    subvolume) btrfs subvolume create "$T" > /dev/null; make_files "$T" "$FILES" ;;
    directory|passes) make_files "$T" "$FILES"; mkdir "$T/empty" ;;
    nested)  # half the files in a subvolume, the other half its read-only snapshot
      mkdir "$T"
      btrfs subvolume create "$T/live" > /dev/null
      make_files "$T/live" $((FILES / 2))
      btrfs subvolume snapshot -r "$T/live" "$T/snap" > /dev/null
      # Copies made since, which a dedupe frees (the snapshot holds the originals),
      # and one file in the root's own subvolume.
      cp -r --reflink=never "$T/live/d000" "$T/live/copy"
      cp --reflink=never "$T/live/d001/s2/f00200" "$T/top-file" ;;
  esac
  sync
  settle
  ensure_files=$(find "$T" -type f | wc -l)
  expect=$FILES
  [ "$KIND" != nested ] || expect=$((FILES / 2 * 2 + 201))
  [ "$ensure_files" = "$expect" ] || fail "made $ensure_files files, not $expect"

  "$BIN/oans-scan" --quiet "$T" -o "$WORK/$KIND-gen1.idx"
  "$BIN/oans-plan" --quiet "$WORK/$KIND-gen1.idx" -o "$WORK/$KIND-plan1"
  "$BIN/oans-apply" --json "$WORK/$KIND-plan1" > "$WORK/$KIND-apply1.json" || fail "apply failed"
  [ "$(json_field "$WORK/$KIND-apply1.json" bytes_deduped)" -gt 0 ] || fail "the first cycle deduped nothing"
  # The dedupe moved the extents of a quarter of the files: their records are carried
  # with the new extents, neither opened nor held. (Nested: it dedupes the 201 copies
  # alone, too few to judge from the previous index; the snapshot's atimes stay.)
  moved_min=$((FILES / 8)) quiet_min=$((FILES * 9 / 10))
  [ "$KIND" != nested ] || moved_min=0 quiet_min=$((FILES * 9 / 20))
  warm "$KIND-after-apply" "$WORK/$KIND-gen1.idx" "$moved_min" "$moved_min"

  # A backup: every directory listed and every file read; relatime writes their atimes.
  probe=$T/d000/s0/f00000  # a unique file: the apply did not read it
  [ "$KIND" != nested ] || probe=$T/live/d001/s1/f00202
  before=$(stat -c %X "$probe")
  find "$T" -type f -exec cat {} + > /dev/null
  [ "$(stat -c %X "$probe")" != "$before" ] || fail "reading a file did not write its atime"
  # Every file's and directory's atime: nearly all are judged unchanged from their
  # items, the directories by their times (their entries are not held).
  [ "$KIND" = nested ] || quiet_min=$((FILES + $(find "$T" -type d | wc -l) * 9 / 10 - 10))
  if [ "$KIND" = directory ]; then
    # Changes among them, each of which a directory judged by its times must not hide:
    # a file renamed within its directory, one removed, a directory renamed with all
    # below it, an empty directory removed, and a file added to a directory whose
    # mtime is then set back (its ctime cannot be).
    mv "$T/d001/s0/f00201" "$T/d001/s0/renamed"
    rm "$T/d002/s1/f00403"
    mv "$T/d004" "$T/d004-moved"
    rmdir "$T/empty"
    mtime=$(stat -c %y "$T/d005/s0")
    printf 'new' > "$T/d005/s0/added"
    touch -d "$mtime" "$T/d005/s0"
  fi
  warm "$KIND-after-backup" "$WORK/$KIND-after-apply.idx" "$quiet_min"
  if [ "$KIND" = nested ]; then
    # A new snapshot of the subvolume, one file changed before it and one after: its
    # records are carried from the subvolume's, and only the changed files count.
    printf 'before the snapshot' >> "$T/live/d001/s1/f00202"
    btrfs subvolume snapshot -r "$T/live" "$T/snap2" > /dev/null
    printf 'after it' >> "$T/live/d002/s2/f00401"
    warm "$KIND-new-snapshot" "$WORK/$KIND-after-backup.idx"
    changed=$("$BIN/oans-cat" "$WORK/$KIND-new-snapshot.idx" | python3 -c '
import json, sys
header = json.loads(sys.stdin.readline())
sys.stdin.read()
print(" ".join(sorted("%d:%d" % (c["fs"], c["ino"]) for c in header["changed_files"])))')
    echo "files listed as changed: $changed"
    [ "$(wc -w <<< "$changed")" = 3 ] || fail "not 3 files listed as changed (f00202 in both, f00401): $changed"
    # A deleted snapshot: its records leave the index.
    btrfs subvolume delete "$T/snap" > /dev/null
    warm "$KIND-after-delete" "$WORK/$KIND-new-snapshot.idx"
    ! grep -q '/snap/' "$WORK/$KIND-after-delete.txt" || fail "records of the deleted snapshot remain"
  fi
done
