#!/usr/bin/env bash
# oans-gen-index writes what it is asked for, and oans-plan finds exactly that in it:
#   - the same options give the same bytes, another seed other bytes;
#   - the index is complete and consistent (oans-cat): one record per inode, block hash
#     counts match the sizes, extents cover the data;
#   - oans-plan's report lists exactly round(files x dup-ratio) copies, of which exactly
#     round(copies x shared-ratio) already share their source's extents;
#   - oans-plan's statistics equal the generator's: whole-file groups, duplicate and shared
#     bytes, reclaimable bytes = duplicate - shared - partial runs left because sharing
#     them frees no extent; partial files give block groups;
#   - the plan reads back (oans-cat validates it) and its operations add up to the
#     planned bytes, never pair a file with itself, stay block aligned and within rounds;
#   - with inline files, the planner skips exactly the inline ones;
#   - bad counts and ratios are refused.
# Usage: gen_index_test.sh BIN_DIR (with oans-gen-index, oans-plan and oans-cat).
set -euo pipefail
BIN=$(cd "$1" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
gen=$BIN/oans-gen-index

fail() { echo "FAIL: $*"; exit 1; }

# 1. Determinism.
args=(--files 10000 --seed 7 --max-inline 0 --dup-ratio 0.1 --shared-ratio 0.25 --partial-ratio 0.05)
"$gen" "${args[@]}" --json >a.idx 2>gen.json
"$gen" "${args[@]}" --json >b.idx 2>/dev/null
cmp -s a.idx b.idx || fail "two runs with the same options differ"
"$gen" --files 10000 --seed 8 --max-inline 0 --dup-ratio 0.1 --shared-ratio 0.25 --partial-ratio 0.05 >c.idx 2>/dev/null
cmp -s a.idx c.idx && fail "--seed 8 wrote the same index as --seed 7"

# 2. The index, the planner's report and statistics, the plan.
"$BIN/oans-cat" a.idx >index.jsonl
"$BIN/oans-plan" --format json a.idx >report.jsonl 2>/dev/null
"$BIN/oans-plan" --json -o a.plan a.idx >plan-stats.json
"$BIN/oans-cat" a.plan >plan.jsonl
python3 - <<'PY'
import json, sys

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

N, DUP, SHARED = 10000, 0.1, 0.25
want_copies = round(N * DUP)
want_shared = round(want_copies * SHARED)
gen = json.loads(open("gen.json").read().strip().splitlines()[-1])
stats = json.loads(open("plan-stats.json").read().strip().splitlines()[-1])

# The generator's own account.
if gen["files"] != N or gen["copies"] != want_copies or gen["shared_copies"] != want_shared:
    fail(f"generator made {gen['files']} files, {gen['copies']} copies, {gen['shared_copies']} shared; "
         f"asked {N}, {want_copies}, {want_shared}")
if gen["partial_files"] != round(N * 0.05):
    fail(f"generator made {gen['partial_files']} partial files, asked {round(N * 0.05)}")

# The index.
recs = lines("index.jsonl")
header, files, end = recs[0], [r for r in recs if r["type"] == "file"], recs[-1]
bs = header["block_size"]
if header["type"] != "index-header" or bs != 131072 or len(header["filesystems"]) != 1:
    fail(f"unexpected header {header}")
if end["type"] != "index-end" or not end["complete"] or end["records"] != N or len(files) != N:
    fail(f"index holds {len(files)} records, end line {end}")
if len({f["ino"] for f in files}) != N or len({f["path"] for f in files}) != N:
    fail("inodes or paths are not unique")
phys_seen = {}
for f in files:
    if not 55 <= len(f["path"]) <= 80:
        fail(f"path length {len(f['path'])}: {f['path']}")
    if "hash" not in f or f["block_count"] != -(-f["size"] // bs):
        fail(f"{f['path']}: {f.get('block_count')} block hashes for {f['size']} bytes")
    ext = f["extents"]
    covered = sum(e[2] for e in ext)
    if ext[0][0] != 0 or covered != -(-f["size"] // 4096) * 4096 or ext[-1][3] & 1 == 0:
        fail(f"{f['path']}: extents {ext} do not cover {f['size']} bytes")
    for e in ext:
        phys_seen.setdefault(e[1], set()).add(f["hash"])
if any(len(h) > 1 for h in phys_seen.values()):
    fail("two different contents at one physical address")

# The planner's report: every copy is a destination, the shared ones are marked.
groups = lines("report.jsonl")
dests = [x for g in groups for x in g["files"] if not x.get("source")]
sources = {x["path"] for g in groups for x in g["files"] if x.get("source")}
if len(dests) != want_copies:
    fail(f"oans-plan reports {len(dests)} duplicate files, asked for {want_copies}")
shared = sum(1 for x in dests if x["already_shared"])
if shared != want_shared:
    fail(f"oans-plan reports {shared} already shared duplicates, asked for {want_shared}")
if len({x["path"] for x in dests}) != len(dests) or sources & {x["path"] for x in dests}:
    fail("a file is a destination twice, or both source and destination")
if len(groups) != gen["whole_file_groups"]:
    fail(f"oans-plan reports {len(groups)} groups, the generator made {gen['whole_file_groups']}")

# The planner's statistics against the generator's.
for k in ("whole_file_groups", "duplicate_bytes", "shared_bytes"):
    if stats[k] != gen[k]:
        fail(f"oans-plan {k} = {stats[k]}, generated {gen[k]}")
if stats["files"] != N or stats["skipped_inline"] or stats["skipped_errors"]:
    fail(f"oans-plan loaded {stats}")
# Of the partial files' runs, those that would leave part of a btrfs extent referenced
# free nothing and are left (lib/plan/frees.h): counted apart, never planned.
left = stats["partial_left_bytes"]
if not 0 <= left <= gen["partial_blocks"] * bs:
    fail(f"oans-plan left {left} bytes of partial runs, more than the {gen['partial_blocks']} blocks generated")
if stats["planned_bytes"] != gen["duplicate_bytes"] - gen["shared_bytes"] - left:
    fail(f"oans-plan would reclaim {stats['planned_bytes']}, expected "
         f"{gen['duplicate_bytes'] - gen['shared_bytes'] - left}")
if not 1 <= stats["block_groups"] <= gen["partial_blocks"]:
    fail(f"{stats['block_groups']} block groups for {gen['partial_blocks']} shared blocks")

# The plan.
plan = lines("plan.jsonl")
ph, rounds, pend = plan[0], [r for r in plan if r["type"] == "round"], plan[-1]
if ph["type"] != "plan-header" or pend["type"] != "plan-end" or not pend["complete"]:
    fail("the plan does not read back completely")
if ph["planned_bytes"] != stats["planned_bytes"] or not ph["rounds"] == len(rounds) == stats["rounds"]:
    fail(f"plan header {ph['planned_bytes']} bytes / {ph['rounds']} rounds, statistics {stats}")
planned, rewritten, ops = 0, 0, 0
for r in rounds:
    total = 0
    for op in r["ops"]:
        ops += 1
        src = r["files"][op["source"]]
        total += op["length"] * (1 + len(op["dests"]))
        if op["offset"] % 4096 or op["length"] <= 0:
            fail(f"round {r['index']}: unaligned or empty operation {op}")
        for d in op["dests"]:
            df = r["files"][d["file"]]
            # A rewrite (docs/format.md): the source range itself, nothing else of its file.
            rewrite = d.get("rewrite", False)
            if rewrite != (d["file"] == op["source"] and d["offset"] == op["offset"]):
                fail(f"round {r['index']}: destination {d} of {op} marked wrongly")
            if rewrite:
                rewritten += op["length"]
            else:
                planned += op["length"]
            if (df["path"] == src["path"] and not rewrite) or d["offset"] % 4096:
                fail(f"round {r['index']}: bad destination {d} of {op}")
            if op["offset"] + op["length"] > src["size"] or d["offset"] + op["length"] > df["size"]:
                fail(f"round {r['index']}: operation {op} runs past the end of a file")
    if total != r["bytes"] or total > ph["round_size"]:
        fail(f"round {r['index']}: {total} bytes, recorded {r['bytes']}, round size {ph['round_size']}")
if rewritten != stats["rewrite_bytes"] or rewritten != ph["rewrite_bytes"]:
    fail(f"the plan's rewrites add up to {rewritten} bytes; statistics say {stats['rewrite_bytes']}, "
         f"its header {ph['rewrite_bytes']}")
if ph["format_version"] != (2 if rewritten else 1):
    fail(f"a plan {'with' if rewritten else 'without'} rewrites has format version {ph['format_version']}")
if planned != stats["planned_bytes"] or ops != stats["operations"]:
    fail(f"the plan's operations add up to {planned} bytes in {ops} operations; statistics say {stats}")
print(f"ok: {N} files, {len(dests)} duplicates ({shared} shared), {len(groups)} groups, "
      f"{stats['block_groups']} block groups, {stats['planned_bytes']} bytes in {ops} operations")
PY

# 3. Inline files (the default): the planner skips exactly those.
"$gen" --files 10000 --seed 3 --dup-ratio 0.2 --json >d.idx 2>gen-d.json
"$BIN/oans-plan" --format json d.idx >report-d.jsonl 2>/dev/null
"$BIN/oans-plan" --json --whole-files-only -o /dev/null d.idx >stats-d.json
python3 - <<'PY'
import json, sys
gen = json.loads(open("gen-d.json").read().strip().splitlines()[-1])
stats = json.loads(open("stats-d.json").read().strip().splitlines()[-1])
dests = sum(len(json.loads(l)["files"]) - 1 for l in open("report-d.jsonl") if l.strip())
problems = []
if gen["copies"] != 2000 or gen["inline_files"] == 0:
    problems.append(f"generated {gen['copies']} copies and {gen['inline_files']} inline files")
if stats["skipped_inline"] != gen["inline_files"]:
    problems.append(f"oans-plan skipped {stats['skipped_inline']} inline files of {gen['inline_files']}")
if dests != gen["copies"] - gen["inline_copies"]:
    problems.append(f"oans-plan reports {dests} duplicates, expected {gen['copies'] - gen['inline_copies']}")
for k in ("whole_file_groups", "duplicate_bytes", "shared_bytes"):
    if stats[k] != gen[k]:
        problems.append(f"oans-plan {k} = {stats[k]}, generated {gen[k]}")
if problems:
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print(f"ok: {gen['inline_files']} inline files skipped, {dests} duplicates")
PY

# 4. Bad options are refused (exit 2) and write nothing.
for bad in "--files 10x" "--files 0" "--files k" "--files 100 --dup-ratio 0.6 --partial-ratio 0.5" \
           "--files 100 --block-size 6K" "--files 100 --max-inline 4K"; do
  rc=0
  # shellcheck disable=SC2086
  "$gen" $bad -o bad.idx 2>/dev/null || rc=$?
  [ $rc = 2 ] || fail "'oans-gen-index $bad' exited with $rc, expected 2"
  [ ! -e bad.idx ] || fail "'oans-gen-index $bad' wrote an index"
done
echo "PASS"
