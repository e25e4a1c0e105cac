#!/usr/bin/env bash
# scan | plan, then apply, on a btrfs image holding a tree and its non-reflinked copy:
# every copied file above the inline limit ends fully shared, contents unchanged, and the
# filesystem's own accounting shows the copy's exclusive bytes gone.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
make_tree "$MNT/orig"
cp -a --reflink=never "$MNT/orig" "$MNT/copy"
# A partial duplicate: the same 2 MiB in the middle of one file and, appended later as
# an extent of its own, at the end of another (btrfs frees an extent only when no part
# of it is referenced: sharing the 2 MiB frees partial-b's second extent, and would free
# nothing of partial-a's one; pieces contiguous on disk are taken as one extent, hence
# the spacer).
rand_file "$WORK/shared.part" $((2 << 20)) 11
rand_file "$WORK/a.head" $((512 << 10)) 12
rand_file "$WORK/b.head" $((1 << 20)) 13
cat "$WORK/a.head" "$WORK/shared.part" "$WORK/a.head" > "$MNT/orig/partial-a.bin"
cp "$WORK/b.head" "$MNT/orig/partial-b.bin"
sync
rand_file "$MNT/orig/spacer.bin" $((1 << 20)) 14  # so that the append lands elsewhere on disk
sync
cat "$WORK/shared.part" >> "$MNT/orig/partial-b.bin"
sync
before=$(checksums "$MNT")
excl_before=$(exclusive_bytes "$MNT/copy")
echo "copy exclusive before: $excl_before"

"$BIN/oans-scan" --quiet "$MNT" | "$BIN/oans-plan" --stats > "$WORK/plan.capnp"
"$BIN/oans-apply" "$WORK/plan.capnp"
sync

after=$(checksums "$MNT")
[ "$before" = "$after" ] || fail "contents changed"
pass "every file's content is unchanged"

left=$(unshared_files "$MNT/copy" 4096)
[ -z "$left" ] || fail "files not fully shared after apply: $left"
pass "every copied file of 4 KiB or more is fully shared"

excl_after=$(exclusive_bytes "$MNT/copy")
echo "copy exclusive after: $excl_after"
# Only files below btrfs's inline limit (data in metadata) may stay exclusive.
[ "$excl_after" -lt 65536 ] || fail "copy still has $excl_after exclusive bytes"
pass "copy's exclusive bytes: $excl_before -> $excl_after"

# The partial duplicate: partial-b's 2 MiB now point into partial-a's extent.
ex_b=$(exclusive_bytes "$MNT/orig/partial-b.bin")
[ "$ex_b" -le $((1 << 20)) ] || fail "partial duplicate not shared: partial-b.bin exclusive $ex_b"
pass "partial duplicate shared (partial-b.bin exclusive $ex_b)"

# Hardlinks were read once: the index has one record for file1.bin and file1.hardlink.
"$BIN/oans-scan" --quiet "$MNT/orig" -o "$WORK/orig.idx"
n=$("$BIN/oans-cat" "$WORK/orig.idx" | grep -c '"other_paths"' || true)
[ "$n" -ge 1 ] || fail "hardlink not merged"
"$BIN/oans-cat" "$WORK/orig.idx" | grep -q 'symlink' && fail "a symlink was recorded"
pass "hardlinks merged, symlinks not followed"

# Warm: nothing left to do.
"$BIN/oans-scan" --quiet "$MNT" | "$BIN/oans-plan" --json 2> "$WORK/stats.json" > "$WORK/plan2.capnp"
python3 -c "import json,sys; s=json.load(open('$WORK/stats.json')); sys.exit(0 if s['planned_bytes']==0 and s['shared_bytes']>0 else 1)" \
  || fail "second plan not empty: $(cat "$WORK/stats.json"; "$BIN/oans-cat" "$WORK/plan2.capnp" | head -20)"
pass "re-plan after apply is empty"
