#!/usr/bin/env bash
# Huge sparse files cost the scan their data, not their size: a 4 EiB file (btrfs allows
# it) and two 1 TiB files with a few MiB of data each are scanned in seconds with bounded
# memory, recorded with their sizes and hashes (no block hashes: they would be too many), and
# the two 1 TiB twins are planned and deduped over their data. Contents are unchanged.
source "$(dirname "$0")/lib.sh"
it_init "$1"
mkfs_mount btrfs 512M
mkdir "$MNT/d"
truncate -s 4E "$MNT/d/huge4e"
python3 - "$MNT/d" <<'PY'
import random, sys
d = sys.argv[1]
r = random.Random(3)
pieces = [(0, r.randbytes(1 << 20)), (512 << 30, r.randbytes(3 << 20)), ((1 << 40) - (1 << 20), r.randbytes(1 << 20))]
for name in ("tib1", "tib2"):
    with open(f"{d}/{name}", "wb") as f:
        f.truncate(1 << 40)
        for at, data in pieces:
            f.seek(at)
            f.write(data)
with open(f"{d}/huge4e", "r+b") as f:
    f.seek(3 << 60)
    f.write(r.randbytes(1 << 16))
PY
sync
before=$(checksums "$MNT")

/usr/bin/time -f "%e %M" -o "$WORK/time" "$BIN/oans-scan" --quiet "$MNT" -o "$WORK/idx"
read -r secs kib < "$WORK/time"
echo "scan: ${secs}s, max RSS ${kib} KiB"
python3 -c "import sys; sys.exit(0 if float('$secs') < 30 else 1)" || fail "scan took ${secs}s"
[ "$kib" -lt 262144 ] || fail "scan used ${kib} KiB of memory"
"$BIN/oans-cat" "$WORK/idx" > "$WORK/idx.json"
python3 - "$WORK/idx.json" <<'PY' || fail "records: $(cat "$WORK/idx.json")"
import json, sys
files = {r["path"].rsplit("/", 1)[-1]: r for r in map(json.loads, open(sys.argv[1])) if r.get("type") == "file"}
h = files["huge4e"]
assert h["size"] == 4 << 60 and "hash" in h and h["block_count"] == 0 and "error" not in h, h
a, b = files["tib1"], files["tib2"]
assert a["size"] == b["size"] == 1 << 40 and a["hash"] == b["hash"] and "error" not in a, (a, b)
# 2^23 blocks, more than the 2^20 block hashes a sparse file may carry: whole-file only.
assert a["block_count"] == b["block_count"] == 0, a["block_count"]
PY
pass "4 EiB and 1 TiB sparse files scanned in ${secs}s with ${kib} KiB, recorded with their hashes"

"$BIN/oans-plan" --json "$WORK/idx" -o "$WORK/plan" > "$WORK/plan.json" 2>&1
"$BIN/oans-apply" --quiet "$WORK/plan"
sync
[ "$before" = "$(checksums "$MNT")" ] || fail "contents changed"
[ -z "$(unshared_files "$MNT/d" 1)" ] || [ "$(unshared_files "$MNT/d" 1)" = "$MNT/d/huge4e" ] \
  || fail "the 1 TiB twins' data not shared: $(unshared_files "$MNT/d" 1)"
pass "the 1 TiB twins are deduped over their data; contents unchanged"
