"""The block requests the kernel issues to the test device, from tracefs.

BlockTrace records the `block:block_rq_issue` tracepoint of one device in its
own tracefs instance (/sys/kernel/tracing/instances/oans-bench-PID, so that
other users of tracefs are not disturbed), filtered in the kernel on the
device's dev_t, into one text file per timed run. A thread drains trace_pipe
while the run goes on, so a long run does not overflow the ring buffer; lost
events (the per-CPU overrun counters) are recorded. `mark(text)` writes a
line into the same trace (trace_marker): the oans chain marks where its scan,
plan and apply start.

Given the test filesystem's device (mountinfo's major:minor, which is the
superblock's; btrfs's stat() gives a subvolume's), the same instance also records
the pages of that filesystem the machine's background reclaim evicts during the
run (`filemap:mm_filemap_delete_from_page_cache` from kswapd and kdamond, DAMON's
proactive reclaim): a page a tool had read and then reads again costs requests
that are the machine's doing, not the tool's, and a run so disturbed is told
apart from the others (the memory cap's own reclaim runs in the tool's context
and is not counted: it is part of the run).

The rest is pure: parse a trace file into requests and markers, split it into
phases, count seeks, build the physical-order floor of a set of requests, and
summarise. The disk model is in benchlib/diskmodel.py.
"""

import os
import re
import subprocess
import threading
import time

TRACEFS = "/sys/kernel/tracing"
INSTANCE_PREFIX = "oans-bench-"
SECTOR = 512

# "  cat-1234  [001] ..... 12.345678: block_rq_issue: 7,0 R 4096 () 2048 + 8 none,0,0 [cat]"
_RQ = re.compile(r"\s(\d+\.\d+): block_rq_issue: (\d+),(\d+) (\S+) (\d+) \(.*?\) (\d+) \+ (\d+)")
_MARK = re.compile(r"\s(\d+\.\d+): tracing_mark_write: (.*)$")
# "  kdamond.0-79  [000] d..2. 12.3: mm_filemap_delete_from_page_cache: dev 0:40 ino 1 pfn=0x1 ofs=0 order=0"
_EVICT = re.compile(r"^\s*(.+?)-\d+\s+\[\d+\].*?\s(\d+\.\d+): mm_filemap_delete_from_page_cache: "
                    r"dev \d+:\d+ ino \w+ pfn=\w+ ofs=\d+ order=(\d+)")
EVICT_EVENT = ("filemap", "mm_filemap_delete_from_page_cache")
# The kernel threads of background reclaim: kswapd (memory short machine-wide) and
# kdamond (DAMON's proactive reclaim, which evicts pages not touched for a while).
RECLAIMERS = ("kswapd", "kdamond")
# The tools' own tasks (comm globs; duperemove's glib threads are "pool"): their
# evictions (a memory cap's reclaim, DONTNEED, a replaced file's pages) are part of
# the run. Any other task's are not: the machine's reclaim, or another process's
# drop_caches.
OWN_TASKS = ("oans-*", "*duperemove*", "pool*", "rdfind", "jdupes")


class Request:
    """One issued request: time (s), first sector, sectors, rwbs flags. after_flush: a
    cache flush was issued between the request before it and this one (the flusher
    waited for the writes before the flush, so they were on the disk by then)."""
    __slots__ = ("ts", "sector", "sectors", "rwbs", "after_flush")

    def __init__(self, ts, sector, sectors, rwbs="R", after_flush=False):
        self.ts, self.sector, self.sectors, self.rwbs = ts, sector, sectors, rwbs
        self.after_flush = after_flush

    @property
    def end(self):
        return self.sector + self.sectors

    @property
    def is_read(self):
        return "R" in self.rwbs

    @property
    def is_write(self):
        return "W" in self.rwbs

    def __repr__(self):
        return f"Request({self.ts}, {self.sector}, {self.sectors}, {self.rwbs!r})"

    def __eq__(self, other):
        return (self.ts, self.sector, self.sectors, self.rwbs) == \
            (other.ts, other.sector, other.sectors, other.rwbs)


def parse_trace(text):
    """(requests with data, in issue order; markers as (ts, text)). Flushes and
    other requests without sectors move no head and are left out; a flush marks the
    request after it (after_flush)."""
    reqs, marks = [], []
    flushed = False
    for line in text.splitlines():
        m = _RQ.search(line)
        if m:
            sectors = int(m.group(7))
            if sectors:
                reqs.append(Request(float(m.group(1)), int(m.group(6)), sectors, m.group(4), flushed))
                flushed = False
            elif "F" in m.group(4):
                flushed = True
            continue
        m = _MARK.search(line)
        if m:
            marks.append((float(m.group(1)), m.group(2).strip()))
    return reqs, marks


def eviction_filter(s_dev):
    """The tracefs filter of the evictions watched: one filesystem's pages, evicted by
    a task not the tools' own (the current task is the evicting one): a background
    reclaim thread, or another process's drop_caches."""
    own = " || ".join(f'comm ~ "{name}"' for name in OWN_TASKS)
    return f"s_dev == {s_dev} && !({own})"


def parse_evictions(text):
    """The watched evictions in a trace, as (ts, reclaiming thread, pages)."""
    out = []
    for line in text.splitlines():
        m = _EVICT.match(line)
        if m:
            out.append((float(m.group(2)), m.group(1).strip(), 1 << int(m.group(3))))
    return out


def eviction_figures(evictions, marks, prefix="phase "):
    """Pages evicted, in all and per marked phase (a phase from its marker to the next)."""
    bounds = phase_bounds(marks, prefix)
    out = {"evicted_pages": sum(p for _, _, p in evictions), "by_thread": {}, "phases": {}}
    for ts, who, pages in evictions:
        name = who.split(".")[0].split("/")[0]
        out["by_thread"][name] = out["by_thread"].get(name, 0) + pages
        phase = next((n for t, n in reversed(bounds) if ts >= t), "start")
        out["phases"][phase] = out["phases"].get(phase, 0) + pages
    return out


def phase_bounds(marks, prefix="phase "):
    """(time, phase name) of the markers 'phase NAME', in order."""
    return [(ts, text[len(prefix):]) for ts, text in marks if text.startswith(prefix)]


def split_phases(reqs, marks, prefix="phase "):
    """{phase name: requests} from markers 'phase NAME'; requests before the
    first marker go to 'start' (absent when empty)."""
    bounds = phase_bounds(marks, prefix)
    out = {}
    i = 0
    name = "start"
    for r in reqs:
        while i < len(bounds) and r.ts >= bounds[i][0]:
            name = bounds[i][1]
            i += 1
        out.setdefault(name, []).append(r)
    for _, n in bounds:
        out.setdefault(n, [])
    return out


def count_seeks(reqs):
    """Requests whose start is not the previous request's end; the first counts."""
    seeks, head = 0, None
    for r in reqs:
        if r.sector != head:
            seeks += 1
        head = r.end
    return seeks


def merged_extents(reqs):
    """The sectors of reqs as sorted, disjoint [start, end) runs, contiguous ones merged."""
    runs = []
    for start, end in sorted((r.sector, r.end) for r in reqs):
        if runs and start <= runs[-1][1]:
            if end > runs[-1][1]:
                runs[-1][1] = end
        else:
            runs.append([start, end])
    return [tuple(x) for x in runs]


def physical_floor(reqs, max_sectors):
    """One read of the same sectors, sorted by offset and merged where contiguous,
    in requests of at most max_sectors (the device's max_sectors_kb)."""
    out = []
    for start, end in merged_extents(reqs):
        s = start
        while s < end:
            n = min(max_sectors, end - s)
            out.append(Request(0.0, s, n, "R"))
            s += n
    return out


def figures(reqs, model):
    """Requests, bytes, seeks and modeled time of a request sequence (in issue order)."""
    reads = [r for r in reqs if r.is_read]
    writes = [r for r in reqs if r.is_write]
    return {"requests": len(reqs), "read_requests": len(reads),
            "read_bytes": sum(r.sectors for r in reads) * SECTOR,
            "write_requests": len(writes),
            "write_bytes": sum(r.sectors for r in writes) * SECTOR,
            "seeks": count_seeks(reqs), "read_seeks": count_seeks(reads),
            "model_s": round(model.time(reqs), 3), "read_model_s": round(model.time(reads), 3),
            "serial_model_s": round(model.serial().time(reqs), 3)}


def floor_figures(reqs, model, max_sectors):
    """figures() of the physical-order read of the sectors reqs read."""
    f = physical_floor([r for r in reqs if r.is_read], max_sectors)
    return {"requests": len(f), "bytes": sum(r.sectors for r in f) * SECTOR,
            "seeks": count_seeks(f), "model_s": round(model.time(f), 3)}


def summarize_trace(reqs, marks, model, max_sectors):
    """The figures of the whole run, its phases (when marked), and the floor of
    each: what reading the same sectors once in physical order would cost."""
    out = figures(reqs, model)
    out["floor"] = floor_figures(reqs, model, max_sectors)
    phases = split_phases(reqs, marks)
    if len(phases) > 1 or "start" not in phases:
        out["phases"] = {}
        for name, rs in phases.items():
            p = figures(rs, model)
            p["floor"] = floor_figures(rs, model, max_sectors)
            out["phases"][name] = p
    return out


def dev_t(major, minor):
    """The tracepoint's dev_t (the kernel's internal MKDEV: major << 20 | minor)."""
    return (major << 20) | minor


def stale_instances(names, alive):
    """Instance names of this harness whose pid is no longer alive(pid)."""
    out = []
    for n in names:
        if n.startswith(INSTANCE_PREFIX) and n[len(INSTANCE_PREFIX):].isdigit():
            if not alive(int(n[len(INSTANCE_PREFIX):])):
                out.append(n)
    return out


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class BlockTrace:
    """One tracefs instance recording block_rq_issue of one block device."""

    def __init__(self, device, buffer_kb=65536):
        self.device = device
        st = os.stat(device)
        self.major, self.minor = os.major(st.st_rdev), os.minor(st.st_rdev)
        self.dir = None
        self.buffer_kb = buffer_kb
        self._thread = None
        self._stop = None
        self._out = None

    @staticmethod
    def available():
        """Mounts tracefs when it is not; whether block events can be traced."""
        if not os.path.isdir(os.path.join(TRACEFS, "instances")):
            subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return os.path.isfile(os.path.join(TRACEFS, "events", "block", "block_rq_issue", "format"))

    @staticmethod
    def remove_stale():
        """Removes the instances of killed earlier runs."""
        inst = os.path.join(TRACEFS, "instances")
        if not os.path.isdir(inst):
            return
        for n in stale_instances(os.listdir(inst), _alive):
            BlockTrace._remove(os.path.join(inst, n))

    @staticmethod
    def _remove(d):
        try:
            _write(os.path.join(d, "tracing_on"), "0")
            _write(os.path.join(d, "events", "block", "block_rq_issue", "enable"), "0")
            if os.path.isdir(os.path.join(d, "events", *EVICT_EVENT)):
                _write(os.path.join(d, "events", *EVICT_EVENT, "enable"), "0")
        except OSError:
            pass
        for _ in range(20):
            try:
                os.rmdir(d)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)  # busy while a reader still has trace_pipe open

    def open(self):
        d = os.path.join(TRACEFS, "instances", f"{INSTANCE_PREFIX}{os.getpid()}")
        if os.path.isdir(d):
            self._remove(d)
        os.mkdir(d)
        self.dir = d
        _write(os.path.join(d, "tracing_on"), "0")
        _write(os.path.join(d, "buffer_size_kb"), str(self.buffer_kb))
        ev = os.path.join(d, "events", "block", "block_rq_issue")
        _write(os.path.join(ev, "filter"), f"dev == {dev_t(self.major, self.minor)}")
        _write(os.path.join(ev, "enable"), "1")

    def close(self):
        """Idempotent: stops a recording and removes the instance."""
        if self._thread:
            self.stop()
        if self.dir:
            self._remove(self.dir)
            self.dir = None

    def max_sectors(self):
        kb = open(f"/sys/dev/block/{self.major}:{self.minor}/queue/max_sectors_kb").read()
        return int(kb) * 1024 // SECTOR

    def mark(self, text):
        if self.dir:
            _write(os.path.join(self.dir, "trace_marker"), text + "\n")

    def marker_path(self):
        return os.path.join(self.dir, "trace_marker")

    def _overruns(self):
        total = 0
        for cpu in os.listdir(os.path.join(self.dir, "per_cpu")):
            with open(os.path.join(self.dir, "per_cpu", cpu, "stats")) as f:
                for line in f:
                    if line.startswith("overrun:"):
                        total += int(line.split()[1])
        return total

    def watch_evictions(self, fs_dev):
        """Also records the background reclaim's evictions of pages of the filesystem
        on fs_dev ((major, minor) from mountinfo), or stops doing so (None). False when
        the kernel has no such event or nothing is watched (the runs are then not told
        apart)."""
        ev = os.path.join(self.dir, "events", *EVICT_EVENT)
        if not os.path.isdir(ev):
            return False
        if fs_dev is None:
            _write(os.path.join(ev, "enable"), "0")
            return False
        _write(os.path.join(ev, "filter"), eviction_filter(dev_t(*fs_dev)))
        _write(os.path.join(ev, "enable"), "1")
        return True

    def start(self, path):
        """Records into path until stop()."""
        _write(os.path.join(self.dir, "trace"), "")  # empties the buffer
        self._overrun0 = self._overruns()
        self._out = open(path, "wb")
        self._stop = threading.Event()
        fd = os.open(os.path.join(self.dir, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._drain, args=(fd,), daemon=True)
        _write(os.path.join(self.dir, "tracing_on"), "1")
        self._thread.start()

    def _drain(self, fd):
        try:
            while True:
                stopping = self._stop.is_set()
                got = False
                while True:
                    try:
                        b = os.read(fd, 1 << 20)
                    except BlockingIOError:
                        break
                    if not b:
                        break
                    got = True
                    self._out.write(b)
                if stopping and not got:
                    return
                if not got:
                    self._stop.wait(0.2)
        finally:
            os.close(fd)

    def stop(self):
        """Stops recording; returns the events lost to a full buffer."""
        _write(os.path.join(self.dir, "tracing_on"), "0")
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._out.close()
        return self._overruns() - self._overrun0
