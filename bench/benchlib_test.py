#!/usr/bin/env python3
"""bench/benchlib and the two benchmark scripts built on it.

The pure parts of the module (sizes, counts, /usr/bin/time figures, medians,
ratios, growth exponents, table cells, package and loop-device selection,
cgroup names), one real /usr/bin/time run, the scripts' option parsing, and
their reports: print_report (both) and summarize (bench-dedupe) on fixed
inputs must print exactly the tables and fields below, the ones the scripts
printed before they shared the module.
"""

import argparse
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

from benchlib import backup, common, diskmodel, image, memcap, needed, plot, timing, trace  # noqa: E402


def load_script(name):
    """The script as a module (its main() does not run)."""
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), os.path.join(BENCH, name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


class SizesAndCounts(unittest.TestCase):
    def test_parse_size(self):
        self.assertEqual(common.parse_size("512M"), 512 << 20)
        self.assertEqual(common.parse_size("4G"), 4 << 30)
        self.assertEqual(common.parse_size("1.5K"), 1536)
        self.assertEqual(common.parse_size(" 4 GiB "), 4 << 30)
        self.assertEqual(common.parse_size("100"), 100)
        self.assertEqual(common.parse_size("2tb"), 2 << 40)
        for bad in ("", "M", "-1M", "4X", "1e3"):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                common.parse_size(bad)

    def test_parse_count(self):
        self.assertEqual(common.parse_count("100000"), 100000)
        self.assertEqual(common.parse_count("100k"), 100000)
        self.assertEqual(common.parse_count("1M"), 10**6)
        self.assertEqual(common.parse_count("2g"), 2 * 10**9)
        for bad in ("1.5M", "k", "1 M", "10x"):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                common.parse_count(bad)

    def test_human(self):
        self.assertEqual(common.human(None), "-")
        self.assertEqual(common.human(0), "0 B")
        self.assertEqual(common.human(1023), "1023 B")
        self.assertEqual(common.human(1024), "1.0 KiB")
        self.assertEqual(common.human(1536 << 20), "1.5 GiB")
        self.assertEqual(common.human(5 << 50), "5120.0 TiB")

    def test_count_text(self):
        self.assertEqual([common.count_text(n) for n in (999, 1000, 1500, 10**6, 3 * 10**9)],
                         ["999", "1k", "1500", "1M", "3G"])


class TimeFigures(unittest.TestCase):
    def test_four_fields(self):
        fig, notes = timing.parse_time("0.05 0.01 0.02 7800\n")
        self.assertEqual(fig, {"wall": 0.05, "user": 0.01, "sys": 0.02, "maxrss_kib": 7800})
        self.assertEqual(notes, [])

    def test_inputs_and_notes(self):
        fig, notes = timing.parse_time("Command terminated by signal 9\n\n1.50 0.25 0.10 1000 64\n")
        self.assertEqual(fig, {"wall": 1.5, "user": 0.25, "sys": 0.1, "maxrss_kib": 1000,
                               "inputs_bytes": 64 * 512})
        self.assertEqual(notes, ["Command terminated by signal 9"])

    def test_no_figures(self):
        self.assertEqual(timing.parse_time(""), (None, []))
        self.assertEqual(timing.parse_time(None), (None, []))
        self.assertEqual(timing.parse_time("sh: 1: nope: not found\nCommand exited with non-zero status 127"),
                         (None, ["sh: 1: nope: not found"]))
        self.assertEqual(timing.parse_time("1.0 2.0 3.0\n")[0], None)

    def test_real_run(self):
        if not os.access("/usr/bin/time", os.X_OK):
            self.skipTest("/usr/bin/time not installed")
        with tempfile.TemporaryDirectory() as d:
            tf = os.path.join(d, "time")
            argv = timing.time_argv(tf, timing.TIME_FORMAT_INPUTS, ["sh", "-c", "exit 3"])
            self.assertEqual(argv[:5], ["/usr/bin/time", "-o", tf, "-f", "%e %U %S %M %I"])
            self.assertEqual(subprocess.run(argv).returncode, 3)
            fig, notes = timing.parse_time(common.read_file(tf))
        self.assertEqual(sorted(fig), ["inputs_bytes", "maxrss_kib", "sys", "user", "wall"])
        self.assertGreater(fig["maxrss_kib"], 0)
        self.assertEqual(notes, ["Command exited with non-zero status 3"])


class Figures(unittest.TestCase):
    def test_median_of(self):
        rows = [{"w": 3}, {"w": None}, {"w": 1}, {}, {"w": 2}, {"w": 10}]
        self.assertEqual(timing.median_of(rows, "w"), 2.5)
        self.assertIsNone(timing.median_of(rows, "x"))
        self.assertIsNone(timing.median_of([], "w"))

    def test_spread(self):
        self.assertEqual(timing.spread([3.0, 1.0, 2.0], "wall"),
                         {"wall_median": 2.0, "wall_min": 1.0, "wall_max": 3.0})
        self.assertEqual(list(timing.spread([1], "wall")), ["wall_median", "wall_min", "wall_max"])

    def test_ratio(self):
        self.assertEqual(timing.ratio(8.0, 2.0), 4.0)
        self.assertEqual(timing.ratio(1.0, 3.0, 3), 0.333)
        self.assertAlmostEqual(timing.ratio(1.0, 3.0), 1 / 3)
        self.assertEqual(timing.ratio(0, 2.0), 0.0)
        for a, b in ((None, 1.0), (1.0, None), (1.0, 0), (0.0, 0.0)):
            self.assertIsNone(timing.ratio(a, b))

    def test_growth_exponent(self):
        self.assertAlmostEqual(timing.growth_exponent(10.0, 10.0), 1.0)
        self.assertAlmostEqual(timing.growth_exponent(100.0, 10.0), 2.0)
        self.assertAlmostEqual(timing.growth_exponent(1.0, 10.0), 0.0)
        self.assertIsNone(timing.growth_exponent(2.0, 1.0))
        self.assertIsNone(timing.growth_exponent(0.0, 10.0))
        self.assertIsNone(timing.growth_exponent(None, 10.0))

    def test_cell(self):
        self.assertEqual(timing.cell(1.256, "8.2f"), "    1.26")
        self.assertEqual(timing.cell(None, "8.2f"), "       -")
        self.assertEqual(timing.cell(None, "7.1f"), "      -")


class Selection(unittest.TestCase):
    def test_missing_packages(self):
        self.assertEqual(common.missing_packages([("/usr/bin/x", "a"), (None, "b"), (False, "c"),
                                                  (None, "b"), ("", "d")]), ["b", "c", "d"])
        self.assertEqual(common.missing_packages([]), [])

    def test_find_tools(self):
        with tempfile.TemporaryDirectory() as d:
            for rel, mode in (("oans-plan", 0o755), ("a/oans-plan", 0o755), ("z/y/oans-plan", 0o755),
                              ("oans-scan", 0o644), ("sub/oans-scan", 0o755), ("s/u/b/oans-scan", 0o755)):
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write("")
                os.chmod(os.path.join(d, rel), mode)
            os.makedirs(os.path.join(d, "oans-apply"))
            found = common.find_tools(d, ("oans-plan", "oans-scan", "oans-apply"))
        self.assertEqual(found, {"oans-plan": os.path.join(d, "oans-plan"),
                                 "oans-scan": os.path.join(d, "sub/oans-scan")})

    def test_loop_devices_of(self):
        listing = ("/dev/loop0: [2049]:131 (/var/tmp/b/bench/disk.img)\n"
                   "/dev/loop1: [0052]:2 (/var/tmp/b/bench/hddsim/disk)\n"
                   "/dev/loop2: [2049]:77 (/var/tmp/other/disk.img)\n"
                   "/dev/loop3: [2049]:78 (/var/tmp/b/bench/disk.img (deleted))\n"
                   "/dev/loop4: [2049]:131 (/var/tmp/b/bench/disk.img)\n"
                   "/dev/loop5: [2049]:79 (/var/tmp/b/bench/disk.img.old)\n")
        self.assertEqual(image.loop_devices_of(listing, ["/var/tmp/b/bench/disk.img"]), {"/dev/loop0", "/dev/loop4"})
        self.assertEqual(image.loop_devices_of(listing, ["/var/tmp/b/bench/disk.img", "/var/tmp/b/bench/hddsim/disk"]),
                         {"/dev/loop0", "/dev/loop1", "/dev/loop4"})
        self.assertEqual(image.loop_devices_of("", ["/x"]), set())

    def test_mount_dev(self):
        info = ("22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
                "90 22 0:40 / /mnt/t rw,noatime - btrfs /dev/loop0 rw\n"
                "91 90 0:41 / /mnt/t rw,noatime - btrfs /dev/loop1 rw\n")
        self.assertEqual(image.mount_dev("/mnt/t", info), (0, 41))  # mounted over: the top one
        self.assertEqual(image.mount_dev("/", info), (254, 0))
        self.assertIsNone(image.mount_dev("/mnt", info))

    def test_own_v1_memory_cgroup(self):
        text = "9:name=systemd:/\n4:memory:/sessions/abc\n1:cpu,cpuacct:/\n0::/\n"
        self.assertEqual(memcap.own_v1_memory_cgroup(text), "sessions/abc")
        self.assertEqual(memcap.own_v1_memory_cgroup("4:memory:/\n0::/\n"), "")
        self.assertEqual(memcap.own_v1_memory_cgroup("0::/user.slice\n"), "")

    def test_oom_kills(self):
        self.assertEqual(memcap.oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 2)
        self.assertEqual(memcap.oom_kills("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n"), 1)
        self.assertIsNone(memcap.oom_kills("oom_kill_disable 0\n"))

    def test_stale_cgroup(self):
        alive = {100, 200}.__contains__
        p = memcap.CGROUP_PREFIX
        self.assertTrue(memcap.stale_cgroup(f"{p}300-1", 100, alive))   # owner gone
        self.assertTrue(memcap.stale_cgroup(f"{p}100-4", 100, alive))   # our own
        self.assertFalse(memcap.stale_cgroup(f"{p}200-2", 100, alive))  # another running benchmark
        self.assertTrue(memcap.stale_cgroup(f"{p}x-2", 100, alive))     # not a pid: ours by name
        self.assertFalse(memcap.stale_cgroup("user.slice", 100, alive))


def mount_options_of(path):
    """The options of the mount holding path (the longest mount point above it)."""
    best, opts = "", ""
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            mp = fields[1].replace("\\040", " ")
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
                best, opts = mp, fields[3]
    return opts.split(",")


class WarmScenarios(unittest.TestCase):
    """bench-dedupe's warm cycles, --atime and --also-oans; benchlib/backup.py."""

    def test_chain_cycles(self):
        dedupe = load_script("bench-dedupe")
        cases = [(["cold"], ["cold"]), (["hash"], []), (["bounds", "warm-apply"], ["cold", "warm-apply"]),
                 (["warm"], ["cold", "warm-apply", "warm"]),
                 (["warm-backup", "nightly"], ["cold", "warm-apply", "warm-backup", "nightly"]),
                 (["nightly"], ["cold", "nightly"]), (dedupe.ALL_SCENARIOS, dedupe.CYCLES)]
        for asked, cycles in cases:
            self.assertEqual(dedupe.chain_cycles(asked), cycles, msg=asked)
        for s in dedupe.CYCLES[1:]:
            self.assertEqual(dedupe.FLOOR_OF[s], ("stat", 1))

    def test_options(self):
        dedupe = load_script("bench-dedupe")
        a = dedupe.parse_args(["--also-oans", "old=/x/build", "--also-oans", "v2=y"])
        self.assertEqual((a.atime, a.also_oans), ("relatime", [("old", "/x/build"), ("v2", os.path.abspath("y"))]))
        self.assertEqual(dedupe.parse_args(["--atime", "noatime"]).atime, "noatime")
        scale = load_script("bench-scale")
        self.assertEqual((scale.parse_args([]).atime, scale.parse_args(["--atime", "noatime"]).atime),
                         ("relatime", "noatime"))
        self.assertIn("warm-backup", scale.parse_args([]).seed_strace)
        with contextlib.redirect_stderr(io.StringIO()):
            for bad in (["--atime", "strictatime"], ["--also-oans", "old"], ["--also-oans", "oans=/b"],
                        ["--also-oans", "a b=/b"], ["--also-oans", "x=/a", "--also-oans", "x=/b"],
                        ["--also-oans", "=/b"], ["--also-oans", "old="]):
                with self.assertRaises(SystemExit, msg=bad):
                    dedupe.parse_args(bad)
            with self.assertRaises(SystemExit):
                scale.parse_args(["--atime", "atime"])

    def test_reset_image(self):
        """--reset image: the first populate keeps the image, every later reset copies it
        back and copies no tree again; with recopy no image is kept and the tree is copied
        again."""
        dedupe = load_script("bench-dedupe")
        self.assertEqual(dedupe.parse_args(["--reset", "image"]).reset, "image")
        calls = []

        class FakeBench:
            tree = None  # an empty directory: nothing to remove

            def save_image(self):
                calls.append("save")

            def restore_image(self):
                calls.append("restore")

        real_run, real_sync = dedupe.run, dedupe.os.sync
        dedupe.run = lambda argv, **kw: calls.append(argv[0])
        dedupe.os.sync = lambda: None
        try:
            with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as tree:
                with open(os.path.join(d, "f"), "w") as f:
                    f.write("x")
                FakeBench.tree = tree
                for mode, want in (("image", ["cp", "cp", "save", "restore", "restore"]),
                                   ("recopy", ["cp", "cp", "cp", "cp", "cp", "cp"])):
                    calls.clear()
                    args = dedupe.parse_args(["--reset", mode, "--copies", "2"])
                    bm = dedupe.Benchmark(args, FakeBench(), d, [])
                    bm.populate()
                    for _ in range(2):
                        bm.state = "used"
                        bm.ensure_fresh()
                    self.assertEqual(calls, want, msg=mode)
                    self.assertEqual(bm.state, "fresh")
        finally:
            dedupe.run, dedupe.os.sync = real_run, real_sync

    def test_mount_options(self):
        self.assertEqual(backup.mount_options("relatime"), "relatime,nodiscard")
        self.assertEqual(backup.mount_options("noatime", "xfs"), "noatime")
        with self.assertRaises(ValueError):
            backup.mount_options("strictatime")

    def test_quiet_checks(self):
        """The checks run on a noatime remount, put back even when a check fails; nothing
        is remounted when the run's option is noatime."""
        calls = []
        with backup.quiet_checks("/m", "relatime", calls.append):
            calls.append("check")
        self.assertEqual(calls, ["noatime", "check", "relatime"])
        calls.clear()
        with self.assertRaises(RuntimeError):
            with backup.quiet_checks("/m", "relatime", calls.append):
                raise RuntimeError("a check failed")
        self.assertEqual(calls, ["noatime", "relatime"])
        calls.clear()
        with backup.quiet_checks("/m", "noatime", calls.append):
            calls.append("check")
        self.assertEqual(calls, ["check"])
        with self.assertRaises(ValueError):
            with backup.quiet_checks("/m", "strictatime", calls.append):
                pass

    def make_tree(self, d):
        os.makedirs(os.path.join(d, "a", "b"))
        for rel in ("f", "a/g", "a/b/h"):
            with open(os.path.join(d, rel), "w") as f:
                f.write(rel)
        os.symlink("f", os.path.join(d, "link"))
        return [d, os.path.join(d, "a"), os.path.join(d, "a", "b"), os.path.join(d, "f"),
                os.path.join(d, "a", "g"), os.path.join(d, "a", "b", "h")]

    def test_atimes_written(self):
        with tempfile.TemporaryDirectory() as d:
            paths = self.make_tree(d)
            before = backup.atimes(d)
            self.assertEqual(sorted(before), sorted(paths))  # the symlink is neither read nor counted
            after = dict(before)
            after[paths[3]] += 1
            after[paths[1]] += 5
            del after[paths[5]]
            self.assertEqual(backup.written(before, after), 2)
            self.assertEqual(backup.written(before, before), 0)
        self.assertEqual(backup.read_command("/m/t x", 2),
                         "find '/m/t x' -type f -print0 | xargs -0 -r -P 2 -n 200 cat > /dev/null")

    def test_read_writes_old_atimes(self):
        """A real read (no remount: mode noatime) of a tree whose atimes are two days old
        writes every directory's and file's atime where the mount updates atimes."""
        with tempfile.TemporaryDirectory() as d:
            if "noatime" in mount_options_of(os.path.realpath(d)):
                self.skipTest(f"{d} is on a noatime mount")
            paths = self.make_tree(d)
            old = 1_000_000_000
            for p in paths:
                os.utime(p, ns=(old, os.lstat(p).st_mtime_ns))
            with contextlib.redirect_stderr(io.StringIO()):
                got = backup.backup_read(d, d, "noatime")
        self.assertEqual((got["inodes"], got["atime_written"], got["remount"]), (6, 6, None))


TRACE_TEXT = """\
# tracer: nop
#
     kworker/u4:1-77      [000] ..... 100.000000: block_rq_issue: 7,0 R 4096 () 1000 + 8 none,0,0 [kworker/u4:1]
     kworker/u4:1-77      [000] ..... 100.001000: block_rq_issue: 7,0 R 8192 () 1008 + 16 none,0,0 [kworker/u4:1]
               sh-90      [001] ..... 100.002000: tracing_mark_write: phase apply
     kworker/u4:1-77      [000] ..... 100.003000: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/u4:1]
     kworker/u4:1-77      [000] ..... 100.004000: block_rq_issue: 7,0 W 4096 () 5000 + 8 none,0,0 [kworker/u4:1]
     kworker/u4:1-77      [000] ..... 100.005000: block_rq_issue: 7,0 RA 4096 () 1024 + 8 none,0,0 [kworker/u4:1]
"""


class BlockTrace(unittest.TestCase):
    R = trace.Request

    def test_parse(self):
        reqs, marks = trace.parse_trace(TRACE_TEXT)
        self.assertEqual(reqs, [self.R(100.0, 1000, 8, "R"), self.R(100.001, 1008, 16, "R"),
                                self.R(100.004, 5000, 8, "W"), self.R(100.005, 1024, 8, "RA")])
        self.assertEqual(marks, [(100.002, "phase apply")])
        # The flush marks the request after it, and only that one.
        self.assertEqual([r.after_flush for r in reqs], [False, False, True, False])

    def test_phases(self):
        reqs, marks = trace.parse_trace(TRACE_TEXT)
        ph = trace.split_phases(reqs, marks)
        self.assertEqual(sorted(ph), ["apply", "start"])
        self.assertEqual([r.sector for r in ph["start"]], [1000, 1008])
        self.assertEqual([r.sector for r in ph["apply"]], [5000, 1024])
        # A phase marked but without requests is still there, empty.
        self.assertEqual(trace.split_phases(reqs[:2], marks)["apply"], [])

    def test_seeks(self):
        R = self.R
        self.assertEqual(trace.count_seeks([]), 0)
        # The first request counts; a contiguous one does not; going back does.
        self.assertEqual(trace.count_seeks([R(0, 10, 8), R(0, 18, 8), R(0, 26, 1)]), 1)
        self.assertEqual(trace.count_seeks([R(0, 10, 8), R(0, 19, 8), R(0, 10, 8), R(0, 18, 8)]), 3)

    def test_physical_floor(self):
        R = self.R
        reqs = [R(0, 100, 8), R(0, 0, 8), R(0, 8, 8), R(0, 104, 8), R(0, 300, 2048)]
        self.assertEqual(trace.merged_extents(reqs), [(0, 16), (100, 112), (300, 2348)])
        floor = trace.physical_floor(reqs, 1024)
        self.assertEqual([(r.sector, r.sectors) for r in floor],
                         [(0, 16), (100, 12), (300, 1024), (1324, 1024)])
        self.assertEqual(trace.count_seeks(floor), 3)
        # The same sectors in any order have the same floor.
        self.assertEqual(trace.physical_floor(list(reversed(reqs)), 1024), floor)

    def test_summary(self):
        reqs, marks = trace.parse_trace(TRACE_TEXT)
        m = diskmodel.DiskModel(1 << 30)
        s = trace.summarize_trace(reqs, marks, m, 1024)
        self.assertEqual((s["requests"], s["read_requests"], s["read_bytes"], s["write_requests"], s["seeks"]),
                         (4, 3, 16384, 1, 3))
        # The reads 1000+8, 1008+16 and (later) 1024+8 are one run on the disk.
        self.assertEqual(s["floor"], {"requests": 1, "bytes": 16384, "seeks": 1,
                                      "model_s": round(m.time([self.R(0, 1000, 32)]), 3)})
        self.assertEqual(s["phases"]["apply"]["requests"], 2)
        self.assertEqual(s["phases"]["start"]["seeks"], 1)
        self.assertNotIn("phases", trace.summarize_trace(reqs[:2], [], m, 1024))

    def test_evictions_by_the_machines_reclaim(self):
        text = TRACE_TEXT + (
            "       kdamond.0-79      [000] d..2. 100.003000: mm_filemap_delete_from_page_cache:"
            " dev 0:40 ino 1 pfn=0x1b1cff ofs=22036480 order=0\n"
            "         kswapd0-60      [001] d..2. 100.006000: mm_filemap_delete_from_page_cache:"
            " dev 0:40 ino 104 pfn=0x1b1d00 ofs=8192 order=2\n"
            "       kdamond.0-79      [000] d..2. 99.000000: mm_filemap_delete_from_page_cache: dev 0:40\n")
        ev = trace.parse_evictions(text)
        self.assertEqual(ev, [(100.003, "kdamond.0", 1), (100.006, "kswapd0", 4)])
        # The requests are read as before: the eviction lines are not requests.
        self.assertEqual(trace.parse_trace(text), trace.parse_trace(TRACE_TEXT))
        _, marks = trace.parse_trace(text)
        self.assertEqual(trace.eviction_figures(ev, marks),
                         {"evicted_pages": 5, "by_thread": {"kdamond": 1, "kswapd0": 4}, "phases": {"apply": 5}})
        self.assertEqual(trace.eviction_figures(ev[:1], [])["phases"], {"start": 1})
        self.assertEqual(trace.eviction_filter(40), 's_dev == 40 && !(comm ~ "oans-*" || comm ~ "*duperemove*"'
                         ' || comm ~ "pool*" || comm ~ "rdfind" || comm ~ "jdupes")')

    def test_dev_t_and_stale(self):
        self.assertEqual(trace.dev_t(7, 3), (7 << 20) | 3)
        names = ["oans-bench-12", "oans-bench-13", "other", "oans-bench-x"]
        self.assertEqual(trace.stale_instances(names, lambda pid: pid == 13), ["oans-bench-12"])


class DiskModel(unittest.TestCase):
    def test_costs(self):
        R = trace.Request
        m = diskmodel.DiskModel(1000 * 10**9)  # 1 TB stroke
        half_rot = 30000 / 7200
        self.assertAlmostEqual(m.seek_ms(0), 1.0 + half_rot)
        self.assertAlmostEqual(m.seek_ms(1000 * 10**9), 15.0 + half_rot)
        self.assertAlmostEqual(m.seek_ms(-250 * 10**9), 1.0 + 14.0 * 0.5 + half_rot)
        self.assertAlmostEqual(m.seek_ms(10**15), 15.0 + half_rot)  # no farther than a full stroke
        self.assertAlmostEqual(m.transfer_ms(150 * 10**6), 1000.0)
        # 150 MB sequential: one positioning, then transfer only.
        seq = [R(0, i * 2048, 2048) for i in range(143)]
        self.assertAlmostEqual(m.time(seq), (1.0 + half_rot + m.transfer_ms(143 * 2048 * 512)) / 1000)
        # The same requests back and forth cost a seek each.
        rev = list(reversed(seq))
        self.assertGreater(m.time(rev), m.time(seq) + 142 * (1.0 + half_rot) / 1000 - 1e-9)
        self.assertEqual(m.time([]), 0.0)
        # A short skip forward (under one track, 1.25 MB) costs the skipped bytes passing under
        # the head; backward, or farther than a track, it is a seek.
        self.assertAlmostEqual(m.track_bytes, 1.25e6)
        first = 1.0 + half_rot + m.transfer_ms(4096)
        skip = [R(0, 0, 8), R(0, 136, 8)]  # 64 KiB skipped
        self.assertAlmostEqual(m.time(skip), (first + m.transfer_ms(65536) + m.transfer_ms(4096)) / 1000)
        back = [R(0, 136, 8), R(0, 0, 8)]
        self.assertAlmostEqual(m.time(back), (first + m.seek_ms(-(136 + 8) * 512) + m.transfer_ms(4096)) / 1000)
        far = [R(0, 0, 8), R(0, 8 + 4096, 8)]  # 2 MiB skipped
        self.assertAlmostEqual(m.time(far), (first + m.seek_ms(4096 * 512) + m.transfer_ms(4096)) / 1000)
        with self.assertRaises(ValueError):
            diskmodel.DiskModel(0)

    def test_writes_are_queued_and_swept(self):
        R = trace.Request
        m = diskmodel.DiskModel(6 << 30)  # write_queue 32, writes_starved_reads 32
        # A DUP commit: each 256 KiB block written to two places 256 MiB apart, one after
        # the other, 32 requests in all.
        a, b = 400 << 11, 912 << 11
        dup = []
        for i in range(16):
            dup += [R(0, a + i * 512, 512, "WSM"), R(0, b + i * 512, 512, "WSM")]
        order = m.schedule(dup)
        self.assertEqual([dup[i].sector for i in order], sorted(r.sector for r in dup))
        # One seek to the first copy's blocks and one to the second's, not 32.
        first = m.settle_ms + 30000 / m.rpm
        gap = (b - (a + 16 * 512)) * 512
        self.assertAlmostEqual(m.time(dup), (first + m.seek_ms(gap) + m.transfer_ms(32 * 512 * 512)) / 1000)
        serial = m.serial()
        self.assertEqual(serial.schedule(dup), list(range(32)))
        self.assertGreater(serial.time(dup), m.time(dup) + 30 * m.seek_ms(0) / 1000)
        # The sweep starts at the head and wraps once (C-LOOK).
        reqs = [R(0, 5000, 8, "R"), R(0, 100, 8, "W"), R(0, 9000, 8, "W"), R(0, 6000, 8, "W")]
        self.assertEqual([reqs[i].sector for i in m.schedule(reqs)], [5000, 6000, 9000, 100])

    def test_reads_keep_their_order_and_writes_wait_for_them_a_while(self):
        R = trace.Request
        m = diskmodel.DiskModel(6 << 30, write_queue=32, writes_starved_reads=3)
        reqs = [R(0, 1000, 8, "W"), R(0, 50, 8, "R"), R(0, 40, 8, "R"), R(0, 900, 8, "W"),
                R(0, 30, 8, "R"), R(0, 20, 8, "R")]
        # Reads as issued; the two writes go once three reads were served after the first.
        self.assertEqual([reqs[i].sector for i in m.schedule(reqs)], [50, 40, 30, 900, 1000, 20])
        # Writes left at the end are served at the end; no request is lost or doubled.
        tail = [R(0, 10, 8, "R"), R(0, 700, 8, "W"), R(0, 600, 8, "W")]
        self.assertEqual([tail[i].sector for i in m.schedule(tail)], [10, 600, 700])
        # The start times come back in the order of the requests given.
        starts, total = m.timeline(tail)
        self.assertEqual(starts[0], 0.0)
        self.assertLess(starts[2], starts[1])
        self.assertAlmostEqual(total, m.time(tail))

    def test_a_flush_serves_the_writes_before_it_first(self):
        R = trace.Request
        m = diskmodel.DiskModel(6 << 30)
        # A commit's last tree blocks, then (after the flush, which waited for them) the
        # superblock and the next round's reads: the reads do not overtake them.
        reqs = [R(0, 9000, 8, "WSM"), R(0, 7000, 8, "WSM"), R(0, 128, 8, "WSM", after_flush=True),
                R(0, 100000, 8, "R", after_flush=True), R(0, 100008, 8, "R")]
        self.assertEqual([reqs[i].sector for i in m.schedule(reqs)], [7000, 9000, 128, 100000, 100008])
        # Without the flushes the writes would wait for the reads.
        for r in reqs:
            r.after_flush = False
        self.assertEqual([reqs[i].sector for i in m.schedule(reqs)], [100000, 100008, 128, 7000, 9000])

    def test_description_round_trip(self):
        m = diskmodel.DiskModel(1 << 30, write_queue=8)
        self.assertEqual(diskmodel.DiskModel.from_description(m.describe()).describe(), m.describe())
        old = {k: v for k, v in m.describe().items() if k not in ("write_queue", "writes_starved_reads")}
        # Results made before writes were queued were costed in issue order.
        self.assertEqual(diskmodel.DiskModel.from_description(old).write_queue, 1)
        with self.assertRaises(ValueError):
            diskmodel.DiskModel(1 << 30, write_queue=0)


class Needed(unittest.TestCase):
    """What a whole-file dedupe must read, and the links a run left."""

    @staticmethod
    def st(ino, size, dev=1):
        return os.stat_result((0o100644, ino, dev, 1, 0, 0, size, 0, 0, 0))

    def test_needed_files_are_the_shared_sizes_once_per_inode(self):
        e = [("a", self.st(1, 10)), ("b", self.st(2, 10)), ("c", self.st(3, 7)),
             ("d", self.st(4, 0)), ("e", self.st(5, 0)), ("f", self.st(1, 10))]
        self.assertEqual([p for p, _ in needed.needed_files(e)], ["a", "b"])
        # a size met twice only through one inode's two names is not shared
        self.assertEqual(needed.needed_files([("a", self.st(1, 9)), ("b", self.st(1, 9))]), [])

    def test_extent_requests_cover_whole_sectors(self):
        r = needed.extent_requests([(1024, 4096), (513, 10), (1000, 30), (0, 0)])
        self.assertEqual([(x.sector, x.sectors) for x in r], [(2, 8), (1, 1), (1, 2)])

    def test_link_groups_and_their_differences(self):
        e = [("/t/a", self.st(1, 5)), ("/t/b", self.st(1, 5)), ("/t/c", self.st(2, 5))]
        groups, f = needed.link_groups(e, "/t")
        self.assertEqual(groups, [["a", "b"]])
        self.assertEqual((f["groups"], f["linked_names"], f["links_made"]), (1, 2, 1))
        self.assertEqual(needed.group_differences(groups, groups), [])
        self.assertEqual(needed.group_differences(groups, [["a", "b", "c"]]), ["a", "b", "c"])
        self.assertEqual(needed.group_differences(groups, []), ["a", "b"])


class SwapList(unittest.TestCase):
    def test_restore_reads_the_list_of_a_killed_run(self):
        with tempfile.TemporaryDirectory() as d:
            lst = os.path.join(d, "swap-off.list")
            common.write_file(lst, "/dev/vdb\n/swapfile\n")
            calls = []
            orig = memcap.run
            memcap.run = lambda argv, **kw: calls.append(argv)
            try:
                memcap.SwapOff(lst).restore()
            finally:
                memcap.run = orig
            self.assertEqual(calls, [["swapon", "/dev/vdb"], ["swapon", "/swapfile"]])
            self.assertFalse(os.path.exists(lst))


class Measure(unittest.TestCase):
    def measured(self, body, release=None):
        calls, results = [], {}

        def rel():
            calls.append("release")
            if release:
                release()
        with contextlib.redirect_stderr(io.StringIO()):
            code = common.measure(results, body, rel, lambda: calls.append("save"))
        return code, results, calls

    def test_status_of_the_body(self):
        self.assertEqual(self.measured(lambda: None), (0, {}, ["release", "save"]))
        self.assertEqual(self.measured(lambda: 3), (3, {}, ["release", "save"]))

    def test_fatal_and_interrupts_are_recorded(self):
        def fatal():
            raise common.Fatal("no room")

        def ctrl_c():
            raise KeyboardInterrupt()

        def sigterm():
            raise common.Interrupted("signal 15")
        self.assertEqual(self.measured(fatal), (1, {"error": "no room"}, ["release", "save"]))
        self.assertEqual(self.measured(ctrl_c), (130, {"interrupted": True}, ["release", "save"]))
        self.assertEqual(self.measured(sigterm), (130, {"interrupted": True}, ["release", "save"]))

    def test_results_are_saved_when_release_fails(self):
        def broken():
            raise OSError("umount")
        calls, results = [], {}
        with self.assertRaises(OSError), contextlib.redirect_stderr(io.StringIO()):
            common.measure(results, lambda: 0, broken, lambda: calls.append("save"))
        self.assertEqual(calls, ["save"])

    def test_write_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "new", "results.json")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                common.write_json(path, {"a": 1, "b": None})
            with open(path) as f:
                self.assertEqual(json.load(f), {"a": 1, "b": None})
            self.assertIn(f"results: {path}", err.getvalue())


class ScriptOptions(unittest.TestCase):
    def test_bench_scale(self):
        scale = load_script("bench-scale")
        a = scale.parse_args(["--plan-sizes", "2k,1M", "--plan-memory", "512M", "--scan-files", "3k",
                              "--work-dir", "/var/tmp/x", "--parts", "plan"])
        self.assertEqual((a.plan_sizes, a.scan_files, a.parts, a.workdir, a.json),
                         ([2000, 10**6], 3000, ["plan"], "/var/tmp/x", "/var/tmp/x/results.json"))
        with contextlib.redirect_stderr(io.StringIO()):
            for bad in (["--parts", "foo"], ["--plan-memory", "lots"], ["--plan-sizes", "1"]):
                with self.assertRaises(SystemExit, msg=bad):
                    scale.parse_args(bad)

    def test_bench_dedupe(self):
        dedupe = load_script("bench-dedupe")
        a = dedupe.parse_args(["--cap", "512M", "--also-uncapped", "--scenarios", "all", "--seed", "3",
                               "--workdir", "/var/tmp/y"])
        self.assertEqual((a.cap, a.scenarios, a.seed, a.out),
                         (512 << 20, dedupe.ALL_SCENARIOS, 3, "/var/tmp/y/results.json"))
        with contextlib.redirect_stderr(io.StringIO()):
            for bad in (["--cap", "x"], ["--copies", "1"], ["--also-uncapped"], ["--candidates", "foo"]):
                with self.assertRaises(SystemExit, msg=bad):
                    dedupe.parse_args(bad)


# Inputs of the report tests: every branch of the tables (missing values, a failed size, a
# reused tree, failed runs, the baseline ratio, bounds, order-read and order-hdd).
SCALE_RESULTS = {
    "machine": {"nproc": 2, "mem_total_bytes": 8 << 30, "kernel": "6.1.0-test"},
    "oans": {"describe": "v1.0-3-gabc", "commit": "abc123", "source_dir": "/src", "oans_plan_version": "x"},
    "plan": {"memory": "512M", "gen_options": ["--dup-ratio", "0.1"], "runs_per_size": 3, "sizes": [
        {"files": 100000, "index_bytes": 9 << 20, "gen": {"wall_s": 1.25}, "ok": True,
         "median": {"wall_s": 0.5, "user_s": 0.75, "sys_s": 0.125, "max_rss_bytes": 64 << 20},
         "us_per_file": 5.0, "rss_bytes_per_file": 671.0},
        {"files": 1000000, "index_bytes": 90 << 20, "gen": {"reused": True}, "ok": False,
         "median": {"wall_s": 6.0, "user_s": None, "sys_s": 1.5, "max_rss_bytes": 700 << 20},
         "us_per_file": 6.0, "rss_bytes_per_file": 734.0,
         "growth": {"from_files": 100000, "files_ratio": 10.0, "time_ratio": 12.0, "rss_ratio": 10.9375,
                    "time_exponent": 1.0792, "rss_exponent": 1.0389}}]},
    "scan": {"tree": {"files": 3000, "bytes": 13 << 20, "copies": 283, "reused": True,
                      "created": "2026-01-01T00:00:00+0000", "creation_s": 0.7},
             "runs": [{"index_bytes": 141824}], "median": {"wall_s": 0.4, "user_s": 0.05, "sys_s": 0.2,
                                                          "max_rss_bytes": 13 << 20, "files_per_s": 7143.0},
             "plan_median": {"wall_s": 0.1, "max_rss_bytes": 7 << 20},
             "plan_stats": {"whole_file_groups": 210, "planned_bytes": 1 << 20}},
}

DEDUPE_FACTS = {
    "dataset": {"description": "/usr/include/linux: 2 copies x 763 files"},
    "config": {"disk": "loop", "fs": "btrfs", "cap_bytes": 512 << 20, "rounds": 3},
    "candidates": [{"label": "oans", "version": "abc", "path": "/b"},
                   {"label": "duperemove", "version": "0.11", "path": "/usr/bin/duperemove"}],
}

DEDUPE_RUNS = {
    "runs": [
        {"candidate": c, "scenario": s, "rc": rc, "timed_out": False, "wall": w, "user": u, "sys": 0.5,
         "maxrss_kib": 12000, "inputs_bytes": 30 << 20, "index_bytes": ib, "cgroup_peak_bytes": None,
         "disk_busy_s": None}
        for c, s, rc, w, u, ib in [
            ("oans", "cold", 0, 1.0, 0.25, 65000), ("oans", "cold", 0, 3.0, None, 65000),
            ("oans", "cold", 0, 3.5, 0.5, 66000), ("duperemove", "cold", 0, 8.0, 4.0, None),
            ("oans", "hash", 0, 0.5, 0.1, 64000), ("duperemove", "hash", 1, 9.0, 1.0, None),
            ("duperemove", "warm", 0, 4.0, 1.0, 1 << 20), ("oans", "warm", 0, 0.25, 0.05, 60000)]],
    "bounds": [{"bound": k, "method": m, "parallel": n, "rc": 0, "wall": w}
               for k, m, n, w in [("read", "treeread", 1, 0.5), ("read", "treeread", 4, 0.375),
                                  ("read", "xargs-cat", 4, 0.45), ("stat", "treeread", 1, 0.25),
                                  ("stat", "treeread", 4, 0.2), ("stat", "find", 1, 0.3)]],
    "order_read": [{"order": o, "rc": 0, "wall": w} for o, w in [("physical", 0.28), ("shuffled", 0.31)]],
    "order_hdd": [{"tool": t, "order": o, "rc": 0, "wall": w, "disk_busy_s": b}
                  for t, o, w, b in [("scan", "physical", 0.3, 0.25), ("scan", "none", 0.33, None)]],
}

SCALE_REPORT = """\
bench-scale: oans v1.0-3-gabc (abc123), 2 CPUs, 8.0 GiB RAM, Linux 6.1.0-test

oans-plan on synthetic indexes (oans-gen-index --dup-ratio 0.1, --memory 512M; median of 3 run(s), cold caches)
      files      index   gen s   plan s   user s   sys s   peak RSS  us/file  RSS/file  x files  x time   x RSS
    100,000    9.0 MiB     1.2     0.50     0.75    0.12   64.0 MiB     5.00     671 B        -       -       -
  1,000,000   90.0 MiB       -     6.00        -    1.50  700.0 MiB     6.00     734 B     10.0   12.00   10.94   FAILED
  100,000 -> 1,000,000: time grows as files^1.08, peak RSS as files^1.04

oans-scan of 3,000 small files on btrfs (13.0 MiB, 283 copies; tree reused, written 2026-01-01T00:00:00+0000 in 0.7 s; median of 1 run(s), cold caches)
  scan: 0.4 s wall, 0.1 s user, 0.2 s sys, peak RSS 13.0 MiB, 7,143 files/s, index 138.5 KiB
  plan of that index: 0.1 s wall, peak RSS 7.0 MiB, 210 whole-file groups, 1.0 MiB to reclaim
"""

DEDUPE_REPORT = """\

dataset: /usr/include/linux: 2 copies x 763 files
disk: loop / btrfs, cap: 512.0 MiB, rounds: 3
candidates: oans = abc (/b), duperemove = 0.11 (/usr/bin/duperemove)

candidate   scenario        n  median s      min      max    user     sys   peak RSS       read      index  vs base
-------------------------------------------------------------------------------------------------------------------
duperemove  hash            1  all runs failed
oans        hash            1      0.50     0.50     0.50    0.10    0.50   11.7 MiB   30.0 MiB   62.5 KiB        -
duperemove  cold            1      8.00     8.00     8.00    4.00    0.50   11.7 MiB   30.0 MiB          -    1.00x
oans        cold            3      3.00     1.00     3.50    0.38    0.50   11.7 MiB   30.0 MiB   63.5 KiB    2.67x
duperemove  warm            1      4.00     4.00     4.00    1.00    0.50   11.7 MiB   30.0 MiB    1.0 MiB    1.00x
oans        warm            1      0.25     0.25     0.25    0.05    0.50   11.7 MiB   30.0 MiB   58.6 KiB   16.00x
(vs base = baseline median wall / candidate median wall; >1 means faster than baseline)

bound, read every file once: best 0.38 s with treeread x4 (treeread x1: 0.50 s, treeread x4: 0.38 s, xargs-cat x4: 0.45 s)
bound, parallel stat walk: best 0.20 s with treeread x4 (treeread x1: 0.25 s, treeread x4: 0.20 s, find x1: 0.30 s)
oans cold vs read floor: wall 8.00x (3.00 / 0.38 s)
duperemove cold vs read floor: wall 21.33x (8.00 / 0.38 s)
oans hash vs read floor: wall 1.33x (0.50 / 0.38 s)
duperemove warm vs stat floor: wall 20.00x (4.00 / 0.20 s)
oans warm vs stat floor: wall 1.25x (0.25 / 0.20 s)

order-read physical : median 0.28 s (min 0.28, max 0.28)
order-read shuffled : median 0.31 s (min 0.31, max 0.31)
shuffled / physical: 1.11x

order-hdd oans-scan  --order=physical: median 0.30 s (min 0.30, max 0.30), disk busy 0.25 s
order-hdd oans-scan  --order=none    : median 0.33 s (min 0.33, max 0.33)
order-hdd oans-scan  none / physical: 1.10x

"""

DEDUPE_SUMMARY = '{"table": [{"candidate": "oans", "scenario": "cold", "runs": 3, "failed": 0, "wall_median": 3.0, "wall_min": 1.0, "wall_max": 3.5, "user_median": 0.375, "sys_median": 0.5, "maxrss_kib_median": 12000, "inputs_bytes_median": 31457280, "index_bytes_median": 65000, "cgroup_peak_bytes_median": null, "disk_busy_s_median": null, "speedup_vs_baseline": 2.667, "vs_floor": {"bound": "read", "times": 1, "wall_s": 0.375, "wall_ratio": 8.0, "floor_beaten": false}}, {"candidate": "duperemove", "scenario": "cold", "runs": 1, "failed": 0, "wall_median": 8.0, "wall_min": 8.0, "wall_max": 8.0, "user_median": 4.0, "sys_median": 0.5, "maxrss_kib_median": 12000, "inputs_bytes_median": 31457280, "index_bytes_median": null, "cgroup_peak_bytes_median": null, "disk_busy_s_median": null, "speedup_vs_baseline": 1.0, "vs_floor": {"bound": "read", "times": 1, "wall_s": 0.375, "wall_ratio": 21.333, "floor_beaten": false}}, {"candidate": "oans", "scenario": "hash", "runs": 1, "failed": 0, "wall_median": 0.5, "wall_min": 0.5, "wall_max": 0.5, "user_median": 0.1, "sys_median": 0.5, "maxrss_kib_median": 12000, "inputs_bytes_median": 31457280, "index_bytes_median": 64000, "cgroup_peak_bytes_median": null, "disk_busy_s_median": null, "vs_floor": {"bound": "read", "times": 1, "wall_s": 0.375, "wall_ratio": 1.333, "floor_beaten": false}}, {"candidate": "duperemove", "scenario": "hash", "runs": 1, "failed": 1}, {"candidate": "duperemove", "scenario": "warm", "runs": 1, "failed": 0, "wall_median": 4.0, "wall_min": 4.0, "wall_max": 4.0, "user_median": 1.0, "sys_median": 0.5, "maxrss_kib_median": 12000, "inputs_bytes_median": 31457280, "index_bytes_median": 1048576, "cgroup_peak_bytes_median": null, "disk_busy_s_median": null, "speedup_vs_baseline": 1.0, "vs_floor": {"bound": "stat", "times": 1, "wall_s": 0.2, "wall_ratio": 20.0, "floor_beaten": false}}, {"candidate": "oans", "scenario": "warm", "runs": 1, "failed": 0, "wall_median": 0.25, "wall_min": 0.25, "wall_max": 0.25, "user_median": 0.05, "sys_median": 0.5, "maxrss_kib_median": 12000, "inputs_bytes_median": 31457280, "index_bytes_median": 60000, "cgroup_peak_bytes_median": null, "disk_busy_s_median": null, "speedup_vs_baseline": 16.0, "vs_floor": {"bound": "stat", "times": 1, "wall_s": 0.2, "wall_ratio": 1.25, "floor_beaten": false}}], "bounds": {"read": {"median_by_reader": {"treeread x1": 0.5, "treeread x4": 0.375, "xargs-cat x4": 0.45}, "best_reader": "treeread x4", "best_wall_median": 0.375}, "stat": {"median_by_reader": {"treeread x1": 0.25, "treeread x4": 0.2, "find x1": 0.3}, "best_reader": "treeread x4", "best_wall_median": 0.2}}, "order_read": {"physical": {"wall_median": 0.28, "wall_min": 0.28, "wall_max": 0.28, "runs": 1}, "shuffled": {"wall_median": 0.31, "wall_min": 0.31, "wall_max": 0.31, "runs": 1}, "shuffled_over_physical": 1.107}, "order_hdd": {"scan": {"physical": {"wall_median": 0.3, "wall_min": 0.3, "wall_max": 0.3, "disk_busy_s_median": 0.25, "runs": 1}, "none": {"wall_median": 0.33, "wall_min": 0.33, "wall_max": 0.33, "disk_busy_s_median": null, "runs": 1}, "none_over_physical": 1.1}}}'


class Reports(unittest.TestCase):
    def printed(self, fn, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fn(*args)
        return out.getvalue()

    def test_bench_scale_growth(self):
        prev = {"files": 100000, "median": {"wall_s": 0.5, "max_rss_bytes": 64 << 20}}
        e = {"files": 1000000, "median": {"wall_s": 6.0, "max_rss_bytes": 700 << 20}}
        self.assertEqual(load_script("bench-scale").growth(prev, e),
                         {"from_files": 100000, "files_ratio": 10.0, "time_ratio": 12.0,
                          "rss_ratio": 10.9375, "time_exponent": 1.0791812460476247,
                          "rss_exponent": 1.0389180660303696})

    def test_bench_scale_table(self):
        self.maxDiff = None
        self.assertEqual(self.printed(load_script("bench-scale").print_report, SCALE_RESULTS), SCALE_REPORT)

    def test_bench_dedupe_summary_and_table(self):
        self.maxDiff = None
        dedupe = load_script("bench-dedupe")
        summary = dedupe.summarize(DEDUPE_RUNS, "duperemove")
        self.assertEqual(json.dumps(summary), DEDUPE_SUMMARY)
        self.assertEqual(self.printed(dedupe.print_report, summary, DEDUPE_FACTS), DEDUPE_REPORT)


    def test_a_run_that_logged_errors_counts_as_failed(self):
        # duperemove exits 0 after logging "database is locked" for every file, having
        # deduped nothing in a few seconds: not a run to take the median of.
        dedupe = load_script("bench-dedupe")
        runs = json.loads(json.dumps(DEDUPE_RUNS))
        extra = dict(runs["runs"][3], wall=0.5, log_error_lines=471277, log_first_error="database is locked")
        runs["runs"].append(extra)
        runs["runs"].append(dict(runs["runs"][3], wall=9.0))
        row = next(r for r in dedupe.summarize(runs, "duperemove")["table"]
                   if (r["candidate"], r["scenario"]) == ("duperemove", "cold"))
        self.assertEqual((row["runs"], row["failed"]), (3, 1))
        self.assertEqual((row["wall_min"], row["wall_median"]), (8.0, 8.5))


    def test_bench_dedupe_zero_medians(self):
        # /usr/bin/time reports 0.00 s for very short runs: no ratio over zero, no crash.
        dedupe = load_script("bench-dedupe")
        runs = dict(DEDUPE_RUNS, runs=[], bounds=[], order_hdd=[],
                    order_read=[{"order": "physical", "rc": 0, "wall": 0.0},
                                {"order": "shuffled", "rc": 0, "wall": 0.31}])
        summary = dedupe.summarize(runs, "duperemove")
        self.assertIsNone(summary["order_read"]["shuffled_over_physical"])
        text = self.printed(dedupe.print_report, summary, DEDUPE_FACTS)
        self.assertIn("order-read physical : median 0.00 s", text)
        self.assertNotIn("shuffled / physical", text)
        runs["order_read"][1]["wall"] = 0.0
        runs["order_read"][0]["wall"] = 0.28
        summary = dedupe.summarize(runs, "duperemove")
        self.assertIn("shuffled / physical: 0.00x", self.printed(dedupe.print_report, summary, DEDUPE_FACTS))


    def test_floor_beaten_says_the_floor_is_wrong(self):
        dedupe = load_script("bench-dedupe")
        runs = dict(DEDUPE_RUNS)
        # oans hash at 0.25 s beats the best reader (0.375 s): no ratio below 1, a warning.
        runs["runs"] = [dict(r, wall=0.25) if (r["candidate"], r["scenario"]) == ("oans", "hash") else r
                        for r in DEDUPE_RUNS["runs"]]
        summary = dedupe.summarize(runs, "duperemove")
        row = next(r for r in summary["table"] if (r["candidate"], r["scenario"]) == ("oans", "hash"))
        self.assertTrue(row["vs_floor"]["floor_beaten"])
        text = self.printed(dedupe.print_report, summary, DEDUPE_FACTS)
        self.assertIn("FLOOR WRONG: oans hash vs read floor: 0.25 s is below the floor's 0.38 s", text)
        self.assertNotIn("oans hash vs read floor: wall", text)
        self.assertIn("oans warm vs stat floor: wall 1.25x", text)

    def test_a_run_that_reads_no_data_has_the_stat_walk_and_one_read_as_floors(self):
        dedupe = load_script("bench-dedupe")
        runs = dict(DEDUPE_RUNS)
        runs["runs"] = [dict(r, reads_data=False) if r["candidate"] == "oans" else r for r in DEDUPE_RUNS["runs"]]
        summary = dedupe.summarize(runs, "duperemove")
        row = {(r["candidate"], r["scenario"]): r for r in summary["table"]}
        self.assertEqual((row["oans", "hash"]["vs_floor"]["bound"], row["oans", "hash"]["vs_floor"]["times"]),
                         ("stat", 1))
        self.assertEqual(row["oans", "hash"]["vs_floor"]["wall_ratio"], 2.5)  # 0.5 / 0.2 s
        self.assertEqual(row["duperemove", "cold"]["vs_floor"]["bound"], "read")
        for r in runs["runs"]:
            if (r["candidate"], r["scenario"]) == ("oans", "cold"):
                r["cap_bytes"] = 1 << 29
        summary = dedupe.summarize(runs, "duperemove")
        row = {(r["candidate"], r["scenario"]): r for r in summary["table"]}
        self.assertEqual((row["oans", "cold"]["vs_floor"]["bound"], row["oans", "cold"]["vs_floor"]["times"]),
                         ("read", 1))

    def test_capped_cold_is_against_twice_the_read_floor_and_traced_figures(self):
        dedupe = load_script("bench-dedupe")
        tr = {"requests": 10, "read_requests": 8, "read_bytes": 4096, "write_requests": 2, "seeks": 6,
              "read_seeks": 4, "model_s": 3.0, "read_model_s": 2.0, "serial_model_s": 3.5,
              "floor": {"requests": 2, "bytes": 4096, "seeks": 2, "model_s": 0.5},
              "phases": {"apply": {"requests": 4, "read_requests": 3, "read_bytes": 2048, "write_requests": 1,
                                   "seeks": 3, "read_seeks": 3, "model_s": 1.5, "read_model_s": 1.0,
                                   "floor": {"requests": 1, "bytes": 2048, "seeks": 1, "model_s": 0.25}}}}
        runs = {"runs": [{"candidate": "oans", "scenario": "cold", "rc": 0, "timed_out": False, "wall": 1.0,
                          "cap_bytes": 1 << 29, "trace": tr}],
                "bounds": [{"bound": "read", "method": "treeread", "parallel": 1, "rc": 0, "wall": 0.4,
                            "trace": dict(tr, floor=dict(tr["floor"], model_s=1.0))}],
                "order_read": [], "order_hdd": []}
        summary = dedupe.summarize(runs, None)
        f = summary["table"][0]["vs_floor"]
        self.assertEqual((f["times"], f["wall_s"], f["wall_ratio"], f["model_s"], f["model_ratio"]),
                         (2, 0.8, 1.25, 2.0, 1.5))
        text = self.printed(dedupe.print_report, summary, DEDUPE_FACTS)
        self.assertIn("oans cold vs 2 x read floor: wall 1.25x (1.00 / 0.80 s)", text)
        self.assertIn("oans cold vs 2 x read floor: modeled disk 1.50x (3.0 / 2.0 s)", text)
        self.assertIn("the same sectors once in physical order: 2 requests, 2 seeks, modeled disk 1.0 s", text)
        lines = [l.split() for l in text.splitlines() if l.split()[:3] in (["oans", "cold", "all"],
                                                                           ["oans", "cold", "apply"])]
        self.assertEqual(lines[0][2:], ["all", "10", "8", "4.0", "KiB", "2", "6", "4", "3.0", "2", "0.5",
                                        "2.00x", "6.00x", "3.5"])
        # (the apply phase was traced before writes were queued: no serial figure)
        self.assertEqual(lines[1][2:], ["apply", "4", "3", "2.0", "KiB", "1", "3", "3", "1.5", "1", "0.2",
                                        "3.00x", "6.00x", "-"])
        # A modeled time below the floor's is reported as a wrong floor, too.
        runs["runs"][0]["trace"] = dict(tr, model_s=1.0)
        text = self.printed(dedupe.print_report, dedupe.summarize(runs, None), DEDUPE_FACTS)
        self.assertIn("FLOOR WRONG: oans cold vs 2 x read floor: modeled disk 1.0 s is below", text)


    def test_runs_the_machines_reclaim_disturbed_are_told_apart(self):
        dedupe = load_script("bench-dedupe")

        def tr(model_s, evicted):
            return {"requests": 10, "read_requests": 8, "read_bytes": 4096, "write_requests": 2, "seeks": 6,
                    "read_seeks": 4, "model_s": model_s, "read_model_s": 2.0, "serial_model_s": 3.5,
                    "floor": {"requests": 2, "bytes": 4096, "seeks": 2, "model_s": 0.5},
                    "machine_reclaim": {"evicted_pages": evicted, "by_thread": {}, "phases": {}}}
        run = {"candidate": "oans", "scenario": "cold", "rc": 0, "timed_out": False, "wall": 1.0, "cap_bytes": 1 << 29}
        bound = {"bound": "read", "method": "treeread", "parallel": 1, "rc": 0, "wall": 0.4,
                 "trace": dict(tr(1.0, 0), floor={"requests": 2, "bytes": 4096, "seeks": 2, "model_s": 1.0})}
        runs = {"runs": [dict(run, trace=tr(3.0, 0)), dict(run, trace=tr(2.4, 0)), dict(run, trace=tr(5.0, 70))],
                "bounds": [bound], "order_read": [], "order_hdd": []}
        row = dedupe.summarize(runs, None)["table"][0]
        self.assertEqual((row["reclaim_watched_runs"], row["reclaim_disturbed_runs"], row["reclaim_evicted_pages"]),
                         (3, 1, [0, 0, 70]))
        self.assertEqual((row["undisturbed_runs"], row["trace_median_undisturbed"]["model_s"]), (2, 2.7))
        self.assertEqual((row["vs_floor"]["model_ratio"], row["vs_floor"]["model_ratio_undisturbed"]), (1.5, 1.35))
        text = self.printed(dedupe.print_report, dedupe.summarize(runs, None), DEDUPE_FACTS)
        self.assertIn("evicted pages of the test filesystem during 1 of 3 runs (pages per run: 0, 0, 70)", text)
        self.assertIn("modeled disk 1.35x in the 2 runs the machine's reclaim did not disturb (2.7 / 2.0 s)", text)
        # Undisturbed everywhere, or not watched (older results): no split.
        for r in runs["runs"]:
            r["trace"]["machine_reclaim"]["evicted_pages"] = 0
        row = dedupe.summarize(runs, None)["table"][0]
        self.assertEqual(row["reclaim_disturbed_runs"], 0)
        self.assertNotIn("trace_median_undisturbed", row)
        for r in runs["runs"]:
            del r["trace"]["machine_reclaim"]
        self.assertNotIn("reclaim_watched_runs", dedupe.summarize(runs, None)["table"][0])

    def test_costing_a_trace_again_keeps_its_evictions(self):
        dedupe = load_script("bench-dedupe")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r1.trace")
            with open(path, "w") as f:
                f.write(TRACE_TEXT)
            evicted = {"evicted_pages": 3, "by_thread": {"kdamond": 3}, "phases": {"apply": 3}}
            facts = {"config": {"disk_model": diskmodel.DiskModel(1 << 30).describe()},
                     "runs": [{"trace_file": path, "trace": {"lost_events": 0, "machine_reclaim": evicted}},
                              {"trace_file": path, "trace": {"lost_events": 0}}]}
            dedupe.recost(facts, 8)
        self.assertEqual(facts["runs"][0]["trace"]["machine_reclaim"], evicted)
        self.assertEqual(facts["runs"][0]["trace"]["requests"], 4)
        self.assertNotIn("machine_reclaim", facts["runs"][1]["trace"])


class Plot(unittest.TestCase):
    def test_svg(self):
        import xml.etree.ElementTree as ET
        R = trace.Request
        m = diskmodel.DiskModel(1 << 30)
        reads = [R(0, i * 8, 8, "R") for i in range(5000)]
        mixed = [R(0, 0, 8, "R"), R(0, (1 << 30) // 512 - 8, 8, "W"), R(0, 8, 8, "R")]
        text = plot.svg("t & t", [("reads", reads, [("apply", 2500)]), ("mixed", mixed, ())], m)
        root = ET.fromstring(text)
        rects = [e for e in root if e.tag.endswith("rect")]
        # Two frames, and the 5000 contiguous reads fill at most one cell per column.
        self.assertLessEqual(len(rects), 2 + plot.COLS + 3)
        fills = {e.get("fill") for e in rects}
        self.assertIn(plot.COLOURS[1], fills)
        self.assertIn(plot.COLOURS[2], fills)
        self.assertIn("t &amp; t", text)
        self.assertEqual(len([e for e in root if e.tag.endswith("line")]), 1)
        # The write at the top of the device is drawn in the top row of its panel.
        c = plot.cells(mixed, m.timeline(mixed)[0], m.time(mixed), m.capacity)
        self.assertEqual(c[(0, 0)], 1)
        self.assertIn(2, [v for (col, row), v in c.items() if row == plot.ROWS - 1])

    def test_phase_starts(self):
        R = trace.Request
        reqs = [R(1.0, 0, 8), R(2.0, 8, 8), R(3.0, 16, 8)]
        self.assertEqual(plot.phase_starts(reqs, [(0.5, "phase scan"), (2.5, "phase apply"), (2.7, "x")]),
                         [("scan", 0), ("apply", 2)])


STRACE_TABLE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 41.20    0.123456          12     10000       100 openat
 20.00    0.060000           3     20000           newfstatat
  9.00    0.027000           2      1500           getdents64
  5.00    0.015000           1       700        12 statx
  1.00    0.003000           1      3000           read
  0.10    0.000300           1        30           open_by_handle_at
------ ----------- ----------- --------- --------- ----------------
100.00    0.300000           8     35230       112 total
"""


class SeedScenario(unittest.TestCase):
    """benchlib/seed.py: the nightly change, strace counts, cycles and the targets of issue 16."""

    def setUp(self):
        from benchlib import seed
        self.seed = seed
        self.kernel = [f"linux-source-6.1/d{i % 7}/f{i}.c" for i in range(1000)]

    def test_nightly_plan_is_deterministic_and_sized(self):
        a = self.seed.nightly_plan(self.kernel, 13, 1_000_000 // 100, seed=1)
        self.assertEqual(a, self.seed.nightly_plan(self.kernel, 13, 1_000_000 // 100, seed=1))
        self.assertNotEqual(a, self.seed.nightly_plan(self.kernel, 13, 1_000_000 // 100, seed=2))
        total = 13 * 1000 + 10_000
        self.assertEqual(len(a["copy"]) + len(a["small"]), round(total * 0.01))
        self.assertEqual(len(a["append"]), round(total * 0.001))
        self.assertEqual(a["small"][0], 10_000)  # numbered after the existing small files
        self.assertTrue(all(p.startswith("k") and "/linux-source-6.1/" in p for p in a["copy"]))
        self.assertFalse(set(a["copy"]) & set(a["append"]))  # a source of a copy is not edited
        self.assertEqual(len(set(a["append"])), len(a["append"]))
        for p in a["append"]:
            self.assertRegex(p, r"^(k\d\d/linux-source-6\.1/d\d/f\d+\.c|small/t\d{3}/d\d{3}/f\d{7}\.dat)$")
        old, new = a["rename"]
        self.assertRegex(old, r"^k\d\d/linux-source-6\.1/fs$")
        self.assertEqual(new, old + ".renamed")
        with self.assertRaises(ValueError):
            self.seed.nightly_plan([], 13, 10, seed=1)

    def test_strace_counts_and_path_calls(self):
        counts = self.seed.strace_counts(STRACE_TABLE)
        self.assertEqual(counts, {"openat": 10000, "newfstatat": 20000, "getdents64": 1500, "statx": 700,
                                  "read": 3000, "open_by_handle_at": 30})
        self.assertEqual(self.seed.path_calls(counts),
                         {"open": 10030, "stat": 20700, "getdents": 1500, "total": 32230})
        self.assertEqual(self.seed.strace_counts(""), {})
        both = self.seed.add_counts(counts, {"openat": 1, "close": 2}, None)
        self.assertEqual((both["openat"], both["close"], both["read"]), (10001, 2, 3000))

    def test_cycle_sums_steps_and_keeps_the_largest_rss(self):
        steps = [{"wall_s": 1.0, "user_s": 0.5, "sys_s": 0.25, "max_rss_bytes": 100, "inputs_bytes": 4096,
                  "exit": 0},
                 {"wall_s": 0.5, "user_s": 0.25, "sys_s": 0.0, "max_rss_bytes": 300, "inputs_bytes": None,
                  "exit": 1}]
        self.assertEqual(self.seed.cycle(steps), {"wall_s": 1.5, "user_s": 0.75, "sys_s": 0.25,
                                                  "inputs_bytes": 4096, "max_rss_bytes": 300, "exit": 1})
        self.assertIsNone(self.seed.cycle([]))

    def test_targets(self):
        warm = {"wall_s": 1.5, "max_rss_bytes": 100 << 20}
        nightly = {"wall_s": 6.0, "max_rss_bytes": 200 << 20}
        dr = {"wall_s": 45.0}
        rows = self.seed.seed_targets(2_000_000, warm, nightly, dr, {"total": 25_000})
        self.assertEqual([r[3] for r in rows], [True, True, False, True, False])
        self.assertEqual(rows[3][1], 30.0)
        self.assertEqual(rows[2][2], 20_000)
        missing = self.seed.seed_targets(2_000_000, None, None, None, None)
        self.assertEqual([r[3] for r in missing], [None] * 5)

    def test_report_lines(self):
        cyc = {"wall_s": 2.0, "user_s": 1.0, "sys_s": 0.5, "max_rss_bytes": 64 << 20, "inputs_bytes": 1 << 20,
               "exit": 0}
        section = {"tree": {"files": 2_000_000, "kernel_copies": 13, "kernel_files": 76_000,
                            "small_files": 1_000_000, "used_bytes": 25 << 30},
                   "scenarios": {"warm": {"oans": {"cycle": cyc, "steps": {"scan": cyc},
                                                   "path_calls": {"cycle": {"open": 5, "stat": 6, "getdents": 7,
                                                                            "total": 18}}},
                                          "duperemove": {"cycle": dict(cyc, wall_s=40.0, capped=True)}}}}
        lines = self.seed.seed_report(section, common.human)
        text = "\n".join(lines)
        self.assertIn("2,000,000 files on btrfs (13 copies of linux-source-6.1, 76,000 files each", text)
        warm = next(line for line in lines if "warm oans cycle" in line)
        self.assertEqual(warm.split()[3:], ["2.00", "1.00", "0.50", "64.0", "MiB", "1.0", "MiB",
                                            "5", "6", "7", "20.0"])
        self.assertIn("CAPPED", next(line for line in lines if "warm duperemove" in line))
        self.assertIn("warm cycle wall (s)", text)
        self.assertRegex(text, r"duperemove warm / oans warm \(x\) +20\.00 \(limit 10\): holds")
        self.assertRegex(text, r"duperemove warm / oans nightly \(x\) +- \(limit 10\): not measured")
        self.assertNotIn("only", text)
        section.update(duperemove_root="/mnt/tree/k00", duperemove_files=80_000)
        text = "\n".join(self.seed.seed_report(section, common.human))
        self.assertIn("(duperemove ran on /mnt/tree/k00 only, 80,000 files: the ratios below use its measured "
                      "warm run; scaled per file to the whole tree it would take 1,000.0 s, 500.0x the oans "
                      "warm cycle and - the nightly one)", text)
        section["scenarios"]["warm-backup"] = {"oans": {"cycle": dict(cyc, wall_s=4.5, max_rss_bytes=200 << 20)}}
        section["backup_reads"] = {"oans": {"inodes": 93_779, "seconds": 6.9, "atime_written": 93_779,
                                            "remount": "strictatime"}}
        lines = self.seed.seed_report(section, common.human)
        text = "\n".join(lines)
        self.assertIn("backup read before oans's warm-backup: 93,779 directories and files in 6.9 s, "
                      "atime written on 93,779 (strictatime remount)", text)
        self.assertEqual(next(line for line in lines if "warm-backup oans cycle" in line).split()[3], "4.50")
        self.assertRegex(text, r"warm-backup cycle wall \(s\) +4\.50 \(limit 2\): DOES NOT HOLD")
        self.assertRegex(text, r"warm-backup cycle peak RSS \(MiB\) +200\.00 \(limit 64\): DOES NOT HOLD")
        self.assertRegex(text, r"warm-apply cycle wall \(s\) +- \(limit 2\): not measured")
        rows = self.seed.warm_targets({"warm-apply": {"oans": {"cycle": {"wall_s": 2.0, "max_rss_bytes": 64 << 20}}}})
        self.assertEqual([r[3] for r in rows], [True, True, None, None])
        self.assertEqual(self.seed.scaled_to({"wall_s": 2.0}, 10, 50), {"wall_s": 10.0, "scaled_from_files": 10})
        self.assertIsNone(self.seed.scaled_to(None, 10, 50))


if __name__ == "__main__":
    unittest.main()
