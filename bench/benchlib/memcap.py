"""A memory cap for timed runs: one cgroup per run, and swap off meanwhile.

MemCap picks the layout the machine has: cgroup v1 (a child of the harness's
own memory cgroup, memory.limit_in_bytes and memory.memsw.limit_in_bytes),
cgroup v2 (a child of the root, memory.max and memory.swap.max = 0), or
`systemd-run --scope` where a v2 group cannot be made. Groups are named
CGROUP_PREFIX + pid + sequence, so remove_stale_cgroups() can tell those of
a killed run from those of a running one. SwapOff remembers the swap areas it
turned off in a file, so a later cleanup restores them after a SIGKILL.
"""

import os
import re
import shutil
import time

from .common import Fatal, log, output, read_file, run, write_file

CGROUP_PREFIX = "oans-bench-"
CGROUP_V1 = "/sys/fs/cgroup/memory"


def own_v1_memory_cgroup(proc_cgroup_text):
    """The memory cgroup path (without the leading /) in /proc/self/cgroup text, or ''."""
    own = ""
    for line in proc_cgroup_text.splitlines():
        _, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            own = path.lstrip("/")
    return own


def oom_kills(text):
    """The oom_kill count of memory.oom_control (v1) or memory.events (v2), or None."""
    kills = re.search(r"oom_kill (\d+)", text)
    return int(kills.group(1)) if kills else None


class MemCap:
    """Puts one timed run at a time into a fresh memory-limited cgroup."""

    def __init__(self, limit):
        self.limit = limit
        self.mode = None
        self.parent = None
        self.groups = []
        self.seq = 0
        if os.path.exists(os.path.join(CGROUP_V1, "memory.limit_in_bytes")):
            self.mode = "v1"
            with open("/proc/self/cgroup") as f:
                own = own_v1_memory_cgroup(f.read())
            self.parent = os.path.join(CGROUP_V1, own) if own else CGROUP_V1
            if not os.access(self.parent, os.W_OK):
                self.parent = CGROUP_V1
        elif os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            self.mode = "v2"
            self.parent = "/sys/fs/cgroup"
            try:
                ctl = read_file("/sys/fs/cgroup/cgroup.subtree_control", "")
                if "memory" not in ctl.split():
                    write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory")
                probe = self._mkgroup()
                self.destroy(probe)
            except OSError as e:
                if not shutil.which("systemd-run"):
                    raise Fatal(f"cannot create a cgroup v2 group ({e}) and no systemd-run")
                self.mode = "systemd"
        else:
            raise Fatal("no cgroup memory controller found (neither v1 nor v2)")

    def describe(self):
        if self.mode == "v1":
            return f"cgroup v1 child of {self.parent}, memory.limit_in_bytes={self.limit}"
        if self.mode == "v2":
            return f"cgroup v2 child of {self.parent}, memory.max={self.limit}, memory.swap.max=0"
        return f"systemd-run --scope -p MemoryMax={self.limit} -p MemorySwapMax=0"

    def _mkgroup(self):
        self.seq += 1
        path = os.path.join(self.parent, f"{CGROUP_PREFIX}{os.getpid()}-{self.seq}")
        os.mkdir(path)
        self.groups.append(path)
        if self.mode == "v1":
            write_file(os.path.join(path, "memory.limit_in_bytes"), str(self.limit))
            memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
            if os.path.exists(memsw):
                write_file(memsw, str(self.limit))
        else:
            write_file(os.path.join(path, "memory.max"), str(self.limit))
            swap = os.path.join(path, "memory.swap.max")
            if os.path.exists(swap):
                write_file(swap, "0")
        return path

    def prepare(self, argv):
        """Returns (argv, preexec_fn, group) for one run."""
        if self.mode == "systemd":
            return (["systemd-run", "--quiet", "--scope", "-p", f"MemoryMax={self.limit}",
                     "-p", "MemorySwapMax=0", "--"] + argv, None, None)
        group = self._mkgroup()
        procs = os.path.join(group, "cgroup.procs")

        def enter():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        return argv, enter, group

    def stats(self, group):
        if not group:
            return {}
        if self.mode == "v1":
            peak = read_file(os.path.join(group, "memory.max_usage_in_bytes"))
            fail = read_file(os.path.join(group, "memory.failcnt"))
            return {"cgroup_peak_bytes": int(peak) if peak else None,
                    "cgroup_failcnt": int(fail) if fail else None,
                    "oom_kills": oom_kills(read_file(os.path.join(group, "memory.oom_control"), ""))}
        peak = read_file(os.path.join(group, "memory.peak"))
        return {"cgroup_peak_bytes": int(peak) if peak else None,
                "oom_kills": oom_kills(read_file(os.path.join(group, "memory.events"), ""))}

    def destroy(self, group):
        if not group:
            return
        if self.mode == "v1":
            try:
                write_file(os.path.join(group, "memory.force_empty"), "0")
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            log(f"warning: could not remove cgroup {group}")
        if group in self.groups:
            self.groups.remove(group)

    def close(self):
        for g in list(self.groups):
            self.destroy(g)


def stale_cgroup(name, me, alive):
    """Whether a cgroup directory name is one of ours left by a process no longer running
    (alive(pid) says whether a pid runs); groups of other running benchmarks are not."""
    if not name.startswith(CGROUP_PREFIX):
        return False
    owner = name[len(CGROUP_PREFIX):].split("-")[0]
    return not (owner.isdigit() and int(owner) != me and alive(int(owner)))


def remove_stale_cgroups():
    for root in [CGROUP_V1] if os.path.isdir(CGROUP_V1) else ["/sys/fs/cgroup"]:
        if not os.path.isdir(root):
            continue
        for dirpath, dirs, _ in os.walk(root):
            for d in dirs:
                if not stale_cgroup(d, os.getpid(), lambda pid: os.path.exists(f"/proc/{pid}")):
                    continue
                g = os.path.join(dirpath, d)
                if read_file(os.path.join(g, "cgroup.procs"), ""):
                    continue
                try:
                    fe = os.path.join(g, "memory.force_empty")
                    if os.path.exists(fe):
                        write_file(fe, "0")
                    os.rmdir(g)
                    log(f"removed stale cgroup {g}")
                except OSError:
                    pass
            dirs[:] = [d for d in dirs if not d.startswith(CGROUP_PREFIX)]


class SwapOff:
    """Swap off for the benchmark, back on afterwards (also after a SIGKILL, from list_file)."""

    def __init__(self, list_file):
        self.list_file = list_file
        self.swaps = []

    def off(self):
        swaps = output(["swapon", "--show=NAME", "--noheadings", "--raw"], check=False)
        self.swaps = [s for s in swaps.splitlines() if s.strip()]
        if self.swaps:
            log(f"swap off for the run (was: {', '.join(self.swaps)})")
            # Remembered on disk too, so --cleanup can restore it after a SIGKILL.
            write_file(self.list_file, "\n".join(self.swaps) + "\n")
            run(["swapoff", "-a"])

    def restore(self):
        if not self.swaps and os.path.exists(self.list_file):
            self.swaps = (read_file(self.list_file, "") or "").split()
        for s in self.swaps:
            run(["swapon", s], check=False)
        self.swaps = []
        if os.path.exists(self.list_file):
            os.unlink(self.list_file)
