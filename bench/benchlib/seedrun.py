"""The seed scenario of bench-scale, run: oans against duperemove on the seed tree.

In one run, on the tree of benchlib.seedtree (every measured command from cold
caches: sync; echo 3 > drop_caches before each cycle), in this order:

  oans cold        oans-scan -o gen0.idx TREE; oans-plan -o plan gen0.idx;
                   oans-apply --quiet plan            (each step timed)
  oans warm-apply  warm after apply: the first re-run after the dedupe, no settle
                   step, --previous gen0.idx: the dedupe moved extents of ~1M
                   files; plan --since gen0.idx (its plan was applied; whole
                   with --seed-full-plan), apply
  oans after-apply scan --previous apply.idx, plan --since apply.idx, apply:
                   the files warm-apply's apply deduped are the only change
  oans warm        nothing changed since after-apply: scan --previous after.idx,
                   plan --since after.idx, apply; then the three again from
                   after.idx under strace -f -c
  (the backup read: every directory and file read once, benchlib.backup)
  oans warm-backup warm after backup: scan --previous warm.idx, plan, apply
  (the nightly change is made: benchlib.seed.nightly_plan)
  oans nightly     scan --previous backup.idx, plan (the same), apply; then under
                   strace from backup.idx again
  (the nightly change is undone: benchlib.seedtree.undo_change)
  duperemove cold  duperemove -dr -q --hashfile=HF ROOT (HF removed first),
                   ROOT being TREE or TREE/--seed-dr-subtree; capped
  duperemove warm  the same command, HF kept
  (the backup read again)
  duperemove warm-backup  the same command, HF kept
  (the same nightly change made again, only when ROOT is TREE)
  duperemove nightly  the same command, HF kept; then the change undone
  duperemove warm under strace -f -c: a re-run with nothing changed, counted

Every figure is saved to the JSON after each step, so a run cut short keeps
what it measured.
"""

import json
import os
import signal
import subprocess

from .backup import backup_read
from .common import Fatal, human, log, quoted, read_file, run
from .image import drop_caches
from .seed import add_counts, cycle, nightly_plan, path_calls, strace_counts
from .seedtree import apply_change, kernel_files, undo_change
from .timing import TIME_FORMAT_INPUTS, parse_time, time_argv


def last_json_line(text):
    """The last line of text that is a JSON object (the --json summary of an oans tool), or None."""
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def run_group(cmd):
    """Runs cmd in its own process group, stdout and stderr captured as one text (an oans
    tool's --json summary goes to stdout when it writes to -o FILE). On Ctrl-C, SIGTERM or
    any error the whole group is killed (/usr/bin/time and strace do not pass signals on)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        _, err = p.communicate()
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    return p.returncode, err


class SeedRun:
    def __init__(self, args, tools, image, section, save):
        self.args, self.tools, self.image, self.section, self.save = args, tools, image, section, save
        self.state = os.path.join(image.dir, "state")
        self.hf = os.path.join(self.state, "duperemove.hash")
        self.plan = os.path.join(self.state, "plan")
        self.scen = section.setdefault("scenarios", {})
        self.dr_root = os.path.join(image.tree, args.seed_dr_subtree) if args.seed_dr_subtree else image.tree
        section["duperemove_root"] = self.dr_root
        if self.dr_root != image.tree:
            section["duperemove_files"] = count_files(self.dr_root)

    def path(self, name):
        return os.path.join(self.state, name)

    # -------------------------------------------------------------- measuring

    def timed(self, argv, cap=None):
        """argv under /usr/bin/time (and `timeout cap` when capped): its figures."""
        tf = self.path(".time")
        cmd = (["timeout", "--signal=TERM", str(cap)] if cap else []) + [str(a) for a in argv]
        log("$ " + quoted(cmd))
        rc, err = run_group(time_argv(tf, TIME_FORMAT_INPUTS, cmd))
        t, _ = parse_time(read_file(tf, ""))
        if t is None:
            raise Fatal(f"/usr/bin/time gave no figures for {argv[0]} (exit {rc}): " + err.strip()[-500:])
        fig = {"wall_s": t["wall"], "user_s": t["user"], "sys_s": t["sys"],
               "max_rss_bytes": t["maxrss_kib"] * 1024, "inputs_bytes": t.get("inputs_bytes"),
               "exit": rc, "capped": bool(cap) and rc == 124}
        stats = last_json_line(err)
        if stats:
            fig["stats"] = stats
        if rc not in (0, 1):
            fig["error"] = err.strip()[-2000:]
        log(f"  {fig['wall_s']:.2f} s wall, {fig['user_s']:.2f} s user, {fig['sys_s']:.2f} s sys, peak RSS "
            f"{human(fig['max_rss_bytes'])}, read {human(fig['inputs_bytes'])}, exit {rc}"
            + (" (capped)" if fig["capped"] else ""))
        return fig

    def traced(self, argv, cap=None):
        """argv under strace -f -c: {syscall: calls}, and the exit status."""
        out = self.path(".strace")
        cmd = ["strace", "-f", "-c", "-o", out] + (["timeout", str(cap)] if cap else []) + [str(a) for a in argv]
        log("$ " + quoted(cmd))
        rc, _ = run_group(cmd)
        counts = strace_counts(read_file(out, ""))
        log(f"  exit {rc}; open/stat/getdents: {path_calls(counts)}")
        return counts, rc

    # -------------------------------------------------------------- the tools

    def oans_steps(self, previous, out):
        t = self.tools
        scan = [t["oans-scan"], "--json", "--progress", "none", "-o", self.path(out)]
        plan = [t["oans-plan"], "--json", "--progress", "none", "-o", self.plan]
        if previous:
            scan += ["--previous", self.path(previous)]
        if previous and not self.args.seed_full_plan:
            # The previous cycle's plan was applied: plan what involves a new or changed
            # file (README: the next night), as `oans run` does.
            plan += ["--since", self.path(previous)]
        return [("scan", scan + [self.image.tree]),
                ("plan", plan + [self.path(out)]),
                ("apply", [t["oans-apply"], "--quiet", self.plan])]

    def oans(self, name, previous, out, trace):
        entry = self.scen.setdefault(name, {})
        res = entry["oans"] = {"previous": previous, "index": out, "steps": {}}
        drop_caches()
        log(f"seed {name}: oans")
        for step, argv in self.oans_steps(previous, out):
            fig = res["steps"][step] = self.timed(argv)
            if fig["exit"] not in (0, 1):
                raise Fatal(f"oans-{step} failed in the {name} cycle (exit {fig['exit']}): "
                            + fig.get("error", "")[-800:])
        res["cycle"] = cycle(list(res["steps"].values()))
        res["index_bytes"] = os.path.getsize(self.path(out))
        self.save()
        if trace:
            drop_caches()
            log(f"seed {name}: oans under strace")
            res["strace"] = {}
            for step, argv in self.oans_steps(previous, out + ".strace"):
                res["strace"][step], _ = self.traced(argv)
            res["strace"]["cycle"] = add_counts(*res["strace"].values())
            res["path_calls"] = {k: path_calls(v) for k, v in res["strace"].items()}
            os.unlink(self.path(out + ".strace"))
            self.save()

    def duperemove(self, name, trace):
        entry = self.scen.setdefault(name, {})
        argv = [self.tools["duperemove"], "-dr", "-q", f"--hashfile={self.hf}", self.dr_root]
        drop_caches()
        log(f"seed {name}: duperemove")
        res = entry["duperemove"] = {"cycle": self.timed(argv, self.args.seed_dr_cap)}
        res["hashfile_bytes"] = os.path.getsize(self.hf) if os.path.exists(self.hf) else None
        self.save()
        if trace:
            self.duperemove_traced(name)

    def duperemove_traced(self, name):
        """duperemove once more under strace (nothing changed since its last run)."""
        res = self.scen.setdefault(name, {}).setdefault("duperemove", {})
        argv = [self.tools["duperemove"], "-dr", "-q", f"--hashfile={self.hf}", self.dr_root]
        drop_caches()
        log(f"seed {name}: duperemove under strace")
        counts, rc = self.traced(argv, self.args.seed_dr_cap)
        res["strace"], res["strace_exit"] = {"cycle": counts}, rc
        res["path_calls"] = {"cycle": path_calls(counts)}
        self.save()

    # -------------------------------------------------------------- the run

    def run(self, write_small_file):
        os.makedirs(self.state, exist_ok=True)
        trace = set(self.args.seed_strace)
        if self.args.seed_after_cold:
            if not os.path.exists(self.path("gen0.idx")):
                raise Fatal(f"--seed-after-cold: no {self.path('gen0.idx')} of an earlier cold cycle")
            self.section["after_cold_of_an_earlier_run"] = True
        else:
            for name in os.listdir(self.state):
                os.unlink(self.path(name))
            self.oans("cold", None, "gen0.idx", "cold" in trace)
            self.image.count_dedupe_run()
        self.oans("warm-apply", "gen0.idx", "apply.idx", "warm-apply" in trace)
        self.oans("after-apply", "apply.idx", "after.idx", "after-apply" in trace)
        self.oans("warm", "after.idx", "warm.idx", "warm" in trace)
        self.backup_read("oans")
        self.oans("warm-backup", "warm.idx", "backup.idx", "warm-backup" in trace)
        plan = self.nightly_change(write_small_file)
        try:
            self.oans("nightly", "backup.idx", "nightly.idx", "nightly" in trace)
        finally:
            undo_change(self.image)
        if self.args.seed_oans_only:
            self.section["oans_only"] = True
            return
        self.duperemove("cold", "cold" in trace)
        self.duperemove("warm", False)
        self.backup_read("duperemove")
        self.duperemove("warm-backup", False)
        if self.dr_root == self.image.tree:
            apply_change(self.image, plan, write_small_file)
            try:
                self.duperemove("nightly", False)
            finally:
                undo_change(self.image)
        if "warm" in trace and not self.args.seed_no_dr_strace:
            self.duperemove_traced("warm")

    def backup_read(self, tool):
        """The nightly backup's read of the whole tree before tool's warm-backup cycle."""
        reads = self.section.setdefault("backup_reads", {})
        reads[tool] = backup_read(self.image.mnt, self.image.tree, self.args.atime)
        self.save()

    def nightly_change(self, write_small_file):
        """Makes the nightly change (recorded in the section) and returns its plan, which
        is made once more, the same, for duperemove."""
        files = kernel_files(self.image.tree)
        plan = nightly_plan(files, self.args.seed_kernel_copies, self.args.seed_small_files, self.args.seed,
                            rename=self.args.seed_rename)
        self.section["nightly_change"] = {"copied": len(plan["copy"]), "new_small": len(plan["small"]),
                                          "appended": len(plan["append"]), "renamed": plan["rename"],
                                          "renamed_files": count_files(os.path.join(self.image.tree,
                                                                                    plan["rename"][0]))}
        log(f"nightly change: {self.section['nightly_change']}")
        apply_change(self.image, plan, write_small_file)
        return plan


def count_files(path):
    return sum(len(names) for _, _, names in os.walk(path))
