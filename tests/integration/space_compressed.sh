#!/usr/bin/env bash
# On compress=zstd, the plan counts the disk bytes an extent frees (its compressed
# size), not the data's: frees_bytes within 10% of the change in disk usage that
# compsize reports (Debian's btrfs-compsize), while the logical bytes deduped are
# several times more.
source "$(dirname "$0")/lib.sh"
it_init "$1"
command -v compsize > /dev/null || { echo "SKIP: compsize not installed (scripts/install-deps)"; exit 77; }
mkfs_mount btrfs-zstd 512M
python3 - "$MNT/a" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(7)
words = [bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(3000)]
for i in range(300):
    os.makedirs(f"{d}/d{i // 50}", exist_ok=True)
    with open(f"{d}/d{i // 50}/f{i}.txt", "wb") as f:
        f.write(b" ".join(r.choice(words) for _ in range(r.randint(2000, 40000))))
PY
cp -a --reflink=never "$MNT/a" "$MNT/b"
sync
disk() { btrfs filesystem sync "$MNT" > /dev/null; compsize -b "$MNT" | awk '/^TOTAL/ {print $3}'; }
"$BIN/oans-scan" --quiet -o "$WORK/idx" "$MNT"
"$BIN/oans-plan" --json -o "$WORK/plan" "$WORK/idx" > "$WORK/plan.json" 2>&1
cat "$WORK/plan.json"
c0=$(disk)
"$BIN/oans-apply" --quiet "$WORK/plan"
c1=$(disk)
frees=$(json_field "$WORK/plan.json" frees_bytes)
planned=$(json_field "$WORK/plan.json" planned_bytes)
echo "frees_bytes $frees, compsize's change $((c0 - c1)), logical planned $planned"
[ "$planned" -gt $((2 * (c0 - c1))) ] || fail "the data did not compress: the test proves nothing"
within "$frees" $((c0 - c1)) 10 || fail "frees_bytes $frees not within 10% of compsize's $((c0 - c1))"
pass "compress=zstd: frees_bytes $frees within 10% of compsize's $((c0 - c1)) (logical: $planned)"
