"""The pure parts of bench-scale's seed scenario: the nightly change, strace counts, figures.

nightly_plan()  which files the nightly change copies, writes, appends to and
                which directory it renames: deterministic for the seed, drawn
                from the tree's own file lists (no walk of the image needed);
strace_counts() the calls per system call of a `strace -f -c -o FILE` table;
path_calls()    the open, stat and getdents calls among them;
cycle()         the figures of a cycle from those of its steps (sums; peak RSS
                is the largest of any one step);
seed_targets()  issue 16's "done when" lines checked against the figures;
warm_targets()  the limits of the warm cycles after an apply and after a backup.
"""

import random

OPEN_CALLS = ("open", "openat", "openat2", "open_by_handle_at")
STAT_CALLS = ("stat", "lstat", "fstatat64", "newfstatat", "statx")
GETDENTS_CALLS = ("getdents", "getdents64")


def nightly_plan(kernel_files, kernel_copies, small_files, seed, new_ratio=0.01, edit_ratio=0.001,
                 rename="fs"):
    """The nightly change of a tree of kernel_copies copies of kernel_files (paths relative
    to one copy, kNN/...) and small_files small files (small/tNNN/dNNN/fNNNNNNN.dat).

    Returns {copy: [paths to copy, relative to the tree], small: [numbers of new small files],
    append: [paths to append to], rename: [old, new] (a directory of one kernel copy)}:
    new_ratio of the files are new (half copies of kernel files, half small files numbered
    after the existing ones), edit_ratio of the existing files are appended to (none of them
    a source of a copy), and the directory `rename` of one copy is renamed."""
    if not kernel_files or kernel_copies < 1:
        raise ValueError("nightly_plan needs the kernel files and at least one copy")
    rng = random.Random(seed * 1_000_003 + 16)
    total = len(kernel_files) * kernel_copies + small_files
    new = int(round(total * new_ratio))
    edits = int(round(total * edit_ratio))
    copies = new // 2
    kernel_total = len(kernel_files) * kernel_copies

    def existing(i):
        if i < kernel_total:
            return f"k{i // len(kernel_files):02d}/{kernel_files[i % len(kernel_files)]}"
        j = i - kernel_total
        return f"small/t{j // 10000:03d}/d{j // 100 % 100:03d}/f{j:07d}.dat"

    sources = sorted(rng.sample(range(kernel_total), copies))
    taken = set(sources)
    pool = [i for i in rng.sample(range(total), min(total, edits + len(taken))) if i not in taken]
    append = [existing(i) for i in sorted(pool[:edits])]
    k = rng.randrange(kernel_copies)
    return {"copy": [existing(i) for i in sources],
            "small": list(range(small_files, small_files + new - copies)),
            "append": append,
            "rename": [f"k{k:02d}/linux-source-6.1/{rename}", f"k{k:02d}/linux-source-6.1/{rename}.renamed"]}


def strace_counts(text):
    """{syscall: calls} of the table `strace -c` writes (the total line left out)."""
    counts = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[-1].replace("_", "").isalnum() or parts[-1] == "total":
            continue
        try:
            float(parts[0])
            calls = int(parts[3])
        except ValueError:
            continue
        counts[parts[-1]] = counts.get(parts[-1], 0) + calls
    return counts


def path_calls(counts):
    """The open, stat and getdents calls of strace counts, and their sum."""
    pick = {"open": sum(counts.get(c, 0) for c in OPEN_CALLS),
            "stat": sum(counts.get(c, 0) for c in STAT_CALLS),
            "getdents": sum(counts.get(c, 0) for c in GETDENTS_CALLS)}
    pick["total"] = pick["open"] + pick["stat"] + pick["getdents"]
    return pick


def add_counts(*many):
    """The sum of several {syscall: calls}."""
    out = {}
    for counts in many:
        for k, v in (counts or {}).items():
            out[k] = out.get(k, 0) + v
    return out


def cycle(steps):
    """The figures of a cycle run as its steps one after another: wall, user, sys and
    inputs summed, peak RSS the largest of any step, exit the first non-zero one."""
    if not steps:
        return None
    out = {k: sum(s.get(k) or 0 for s in steps) for k in ("wall_s", "user_s", "sys_s", "inputs_bytes")}
    out["max_rss_bytes"] = max(s.get("max_rss_bytes") or 0 for s in steps)
    out["exit"] = next((s["exit"] for s in steps if s.get("exit")), 0)
    return out


def speedup(base, fig):
    """How many times faster fig is than base (wall), or None."""
    if not base or not fig or not fig.get("wall_s") or base.get("wall_s") is None:
        return None
    return base["wall_s"] / fig["wall_s"]


def scaled_to(fig, part_files, files):
    """fig of a run over part_files files, its wall time scaled per file to files (None if
    either is missing)."""
    if not fig or fig.get("wall_s") is None or not part_files:
        return None
    return dict(fig, wall_s=fig["wall_s"] * files / part_files, scaled_from_files=part_files)


def seed_targets(files, oans_warm, oans_nightly, dr_warm, warm_calls):
    """[(what, measured, limit, holds)] for issue 16's "done when" figures; a missing
    figure gives measured None and holds None."""
    def row(what, value, limit, ok):
        return (what, value, limit, None if value is None else ok(value))
    wall = (oans_warm or {}).get("wall_s")
    rss = (oans_warm or {}).get("max_rss_bytes")
    calls = (warm_calls or {}).get("total")
    sw, sn = speedup(dr_warm, oans_warm), speedup(dr_warm, oans_nightly)
    return [row("warm cycle wall (s)", wall, 2.0, lambda v: v <= 2.0),
            row("warm cycle peak RSS (MiB)", None if rss is None else rss / (1 << 20), 128, lambda v: v <= 128),
            row("warm open+stat+getdents calls", calls, files / 100, lambda v: v < files / 100),
            row("duperemove warm / oans warm (x)", sw, 10, lambda v: v >= 10),
            row("duperemove warm / oans nightly (x)", sn, 10, lambda v: v >= 10)]


def warm_targets(scenarios):
    """[(what, measured, limit, holds)]: the warm-apply and warm-backup oans cycles each
    at most 2 s and 64 MiB peak RSS (a missing figure: measured and holds None)."""
    rows = []
    for name in ("warm-apply", "warm-backup"):
        fig = ((scenarios.get(name) or {}).get("oans") or {}).get("cycle") or {}
        wall, rss = fig.get("wall_s"), fig.get("max_rss_bytes")
        rows.append((f"{name} cycle wall (s)", wall, 2.0, None if wall is None else wall <= 2.0))
        mib = None if rss is None else rss / (1 << 20)
        rows.append((f"{name} cycle peak RSS (MiB)", mib, 64, None if mib is None else mib <= 64))
    return rows


SCENARIOS = ("cold", "warm-apply", "after-apply", "warm", "warm-backup", "nightly")


def _fig_row(label, fig, calls, human, base=None):
    def f(v, spec):
        return format(v, spec) if v is not None else "-".rjust(int(spec.split(".")[0].rstrip("d")))
    c = calls or {}
    return (f"  {label:<22} {f(fig.get('wall_s'), '8.2f')} {f(fig.get('user_s'), '8.2f')} "
            f"{f(fig.get('sys_s'), '7.2f')} {human(fig.get('max_rss_bytes')):>10} "
            f"{human(fig.get('inputs_bytes')):>10} {f(c.get('open'), '9d')} {f(c.get('stat'), '9d')} "
            f"{f(c.get('getdents'), '9d')} {f(speedup(base, fig), '8.1f')}" + ("  CAPPED" if fig.get("capped") else "")
            + (f"  exit {fig['exit']}" if fig.get("exit") not in (0, 1, None) else ""))


def times(x):
    return "-" if x is None else f"{x:,.1f}x"


def seed_report(section, human):
    """The lines bench-scale prints for its seed part (human: bytes as text)."""
    t = section.get("tree") or {}
    lines = [f"seed scale: {t.get('files', 0):,} files on btrfs ({t.get('kernel_copies')} copies of "
             f"linux-source-6.1, {t.get('kernel_files', 0):,} files each, + {t.get('small_files', 0):,} "
             f"small files), {human(t.get('used_bytes'))} used; each cycle from cold caches",
             f"  {'scenario / step':<22} {'wall s':>8} {'user s':>8} {'sys s':>7} {'peak RSS':>10} "
             f"{'read':>10} {'open':>9} {'stat':>9} {'getdents':>9} {'x dr warm':>8}"]
    scen = section.get("scenarios") or {}
    dw = (scen.get("warm") or {}).get("duperemove", {}).get("cycle")
    for name in SCENARIOS:
        e = scen.get(name) or {}
        o, d = e.get("oans"), e.get("duperemove")
        if o and o.get("cycle"):
            calls = o.get("path_calls") or {}
            lines.append(_fig_row(f"{name} oans cycle", o["cycle"], calls.get("cycle"), human, dw))
            for step in ("scan", "plan", "apply"):
                if step in o.get("steps", {}):
                    lines.append(_fig_row(f"  {step}", o["steps"][step], calls.get(step), human))
        if d and d.get("cycle"):
            lines.append(_fig_row(f"{name} duperemove", d["cycle"], (d.get("path_calls") or {}).get("cycle"),
                                  human, dw))
    ch = section.get("nightly_change")
    if ch:
        lines.append(f"  nightly change: {ch['copied']:,} copies of kernel files, {ch['new_small']:,} new "
                     f"small files, {ch['appended']:,} files appended to, {ch['renamed'][0]} renamed "
                     f"({ch['renamed_files']:,} files below it)")
    ow = (scen.get("warm") or {}).get("oans", {})
    on = (scen.get("nightly") or {}).get("oans", {})
    rows = seed_targets(t.get("files", 0), ow.get("cycle"), on.get("cycle"), dw,
                        (ow.get("path_calls") or {}).get("cycle"))
    part = section.get("duperemove_files")
    for tool, b in sorted((section.get("backup_reads") or {}).items()):
        lines.append(f"  backup read before {tool}'s warm-backup: {b['inodes']:,} directories and files in "
                     f"{b['seconds']:.1f} s, atime written on {b['atime_written']:,}"
                     + (f" ({b['remount']} remount)" if b.get("remount") else ""))
    lines.append("  targets:")
    if part and dw:
        scaled = scaled_to(dw, part, t.get("files", 0))
        lines.append(f"    (duperemove ran on {section.get('duperemove_root')} only, {part:,} files: the ratios "
                     f"below use its measured warm run; scaled per file to the whole tree it would take "
                     f"{scaled['wall_s']:,.1f} s, {times(speedup(scaled, ow.get('cycle')))} the oans warm "
                     f"cycle and {times(speedup(scaled, on.get('cycle')))} the nightly one)")
    for what, value, limit, holds in rows + warm_targets(scen):
        state = "not measured" if holds is None else ("holds" if holds else "DOES NOT HOLD")
        shown = "-" if value is None else f"{value:,.2f}"
        lines.append(f"    {what:<36} {shown:>12} (limit {limit:,.6g}): {state}")
    return lines
