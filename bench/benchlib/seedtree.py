"""The seed-scale tree of bench-scale: ~2 million files on a btrfs image.

WORKDIR/seed/disk.img (sparse), attached with `losetup --direct-io=on` and
mounted at WORKDIR/seed/mnt with the run's --atime option, holds

  MNT/tree/kNN/linux-source-6.1/...  Debian's linux-source-6.1 unpacked
                                     (k00), then copied with
                                     `cp -a --reflink=never` (k01...);
  MNT/tree/small/tNNN/dNNN/fNNNNNNN.dat  the small files of bench-scale's
                                     scan tree (1-8 KiB, a share of them
                                     copies), written by its create_tree;
  MNT/.bench-scale-seed.json         what the tree is (the marker); a later
                                     run with the same parameters reuses it.

The nightly change (benchlib.seed.nightly_plan) is applied by apply_change()
and undone by undo_change() (new files removed, appended files truncated to
their old size, the renamed directory renamed back), so the tree keeps its
content from run to run. What undo needs is written to WORKDIR/seed/undo.json
before the change is made: a run killed in between is undone by the next.
Dedupe is not undone: the marker counts the runs that deduped the tree.
"""

import json
import os
import subprocess
import time

from .common import Fatal, human, log, read_file, run, timestamp
from .image import LoopImage

SEED_LAYOUT = 1          # bump when the tree is made differently
MARKER = ".bench-scale-seed.json"
KERNEL_TARBALL = "/usr/src/linux-source-6.1.tar.xz"
KERNEL_DIR = "linux-source-6.1"
NEW_DIR = "nightly-new"  # below MNT/tree: the files the nightly change adds
APPEND = b"# appended by the nightly change of bench-scale --parts seed\n" * 64  # 4 KiB


def kernel_copy(tree, i):
    return os.path.join(tree, f"k{i:02d}")


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class SeedImage(LoopImage):
    def __init__(self, workdir, want, create_small):
        """want: the tree's parameters (kernel_copies, small_files, dup_ratio, seed, workers,
        image_bytes, atime: the mount's atime option, not part of the tree's identity);
        create_small(tree, n, dup_ratio, seed, workers) writes the small files."""
        self.dir = os.path.join(workdir, "seed")
        super().__init__(os.path.join(self.dir, "disk.img"), os.path.join(self.dir, "mnt"))
        self.tree = os.path.join(self.mnt, "tree")
        self.undo_file = os.path.join(self.dir, "undo.json")
        self.want = want
        self.create_small = create_small

    def identity(self):
        w = self.want
        return {"layout": SEED_LAYOUT, "kernel_copies": w["kernel_copies"], "small_files": w["small_files"],
                "dup_ratio": w["dup_ratio"], "seed": w["seed"]}

    def marker(self):
        text = read_file(os.path.join(self.mnt, MARKER))
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    def save_marker(self, m):
        with open(os.path.join(self.mnt, MARKER), "w") as f:
            json.dump(m, f)
        os.sync()

    def count_dedupe_run(self):
        """The marker counts the runs that deduped the tree (dedupe is not undone)."""
        m = self.marker() or {}
        m["dedupe_runs"] = m.get("dedupe_runs", 0) + 1
        self.save_marker(m)

    def attach_and_mount(self, check=True):
        os.makedirs(self.mnt, exist_ok=True)
        failure = self.attach()
        if failure is not None:
            log(f"warning: losetup --direct-io=on failed ({failure}); using a buffered loop")
        return self.mount(self.want.get("atime", "relatime"), check=check).returncode == 0

    def prepare(self, rebuild=False):
        """Mounts the image with the wanted tree (undoing a leftover nightly change),
        writing the tree first when the image holds another one or none."""
        os.makedirs(self.dir, exist_ok=True)
        self.release()
        want = self.identity()
        if os.path.exists(self.img) and not rebuild:
            if self.attach_and_mount(check=False):
                m = self.marker()
                if m and all(m.get(k) == v for k, v in want.items()):
                    undo_change(self)
                    log(f"reusing the seed tree in {self.img} (written {m.get('created')} in "
                        f"{m.get('creation_s', 0):.0f} s, deduped by {m.get('dedupe_runs', 0)} earlier run(s))")
                    return dict(m, reused=True)
                log(f"{self.img} holds another tree; writing it again")
            self.release()
        if os.path.exists(self.undo_file):
            os.unlink(self.undo_file)
        return self.write(want)

    def write(self, want):
        size = self.want["image_bytes"]
        have = free_bytes(self.dir) + (os.stat(self.img).st_blocks * 512 if os.path.exists(self.img) else 0)
        need = size * 9 // 10
        if have < need:
            raise Fatal(f"{self.dir}: {human(have)} free, the seed image needs about {human(need)} "
                        f"(fewer --seed-kernel-copies or --seed-small-files, or another --work-dir)")
        t0 = time.monotonic()
        self.create(size)
        os.makedirs(self.mnt, exist_ok=True)
        failure = self.attach()
        if failure is not None:
            log(f"warning: losetup --direct-io=on failed ({failure}); using a buffered loop")
        run(["mkfs.btrfs", "-q", "-f", self.loopdev], capture=True)
        self.mount(self.want.get("atime", "relatime"))
        os.makedirs(self.tree)
        made = write_kernel_copies(self.tree, self.want["kernel_copies"])
        log(f"writing {self.want['small_files']} small files")
        small = self.create_small(os.path.join(self.tree, "small"), self.want["small_files"],
                                  self.want["dup_ratio"], self.want["seed"], self.want["workers"])
        os.sync()
        t1 = time.monotonic()
        df = os.statvfs(self.mnt)
        m = dict(want, created=timestamp(), creation_s=t1 - t0, image_bytes=size,
                 kernel_files=made["files"], kernel_bytes=made["bytes"], small=small,
                 files=made["files"] * self.want["kernel_copies"] + small["files"],
                 used_bytes=(df.f_blocks - df.f_bfree) * df.f_frsize, dedupe_runs=0)
        self.save_marker(m)
        log(f"seed tree written in {t1 - t0:.0f} s: {m['files']:,} files, {human(m['used_bytes'])} used")
        return dict(m, reused=False)


def write_kernel_copies(tree, copies):
    """Unpacks the kernel into k00 and copies it (no reflinks), two copies at a time.
    Returns the files and bytes of one copy."""
    if not os.path.exists(KERNEL_TARBALL):
        raise Fatal(f"{KERNEL_TARBALL} is missing: apt-get install linux-source-6.1")
    first = kernel_copy(tree, 0)
    os.makedirs(first)
    log(f"unpacking {KERNEL_TARBALL} into {first}")
    run(["tar", "-xf", KERNEL_TARBALL, "-C", first])
    files = size = 0
    for dirpath, _, names in os.walk(first):
        for n in names:
            st = os.lstat(os.path.join(dirpath, n))
            files += 1
            size += st.st_size
    pending = list(range(1, copies))
    running = []
    while pending or running:
        while pending and len(running) < 2:
            i = pending.pop(0)
            argv = ["cp", "-a", "--reflink=never", first, kernel_copy(tree, i)]
            log("$ " + " ".join(argv))
            running.append((argv, subprocess.Popen(argv)))
        argv, p = running.pop(0)
        if p.wait() != 0:
            raise Fatal(f"command failed ({p.returncode}): {' '.join(argv)}")
    return {"files": files, "bytes": size}


# ------------------------------------------------------------ the nightly change

def kernel_files(tree):
    """The regular files of k00, relative to it, sorted (the population the change draws from)."""
    first = kernel_copy(tree, 0)
    out = []
    for dirpath, dirs, names in os.walk(first):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(os.path.relpath(p, first))
    return out


def apply_change(image, plan, write_small_file):
    """Makes the nightly change of plan (benchlib.seed.nightly_plan), undo info first."""
    tree = image.tree
    appended = [(p, os.path.getsize(os.path.join(tree, p))) for p in plan["append"]]
    undo = {"new_dir": NEW_DIR, "appended": appended, "renamed": plan["rename"]}
    with open(image.undo_file, "w") as f:
        json.dump(undo, f)
    os.sync()
    new = os.path.join(tree, NEW_DIR)
    for i, src in enumerate(plan["copy"]):
        dst = os.path.join(new, "copies", f"c{i // 1000:03d}", f"{i:06d}-{os.path.basename(src)}")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        copy_bytes(os.path.join(tree, src), dst)
    for i, number in enumerate(plan["small"]):
        dst = os.path.join(new, "small", f"s{i // 1000:03d}", f"n{number:08d}.dat")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        write_small_file(dst, number)
    for p, _ in appended:
        with open(os.path.join(tree, p), "ab") as f:
            f.write(APPEND)
    old, newname = plan["rename"]
    os.rename(os.path.join(tree, old), os.path.join(tree, newname))
    os.sync()


def copy_bytes(src, dst):
    """A plain copy (read and written: no reflink, no shared extent), mode kept."""
    with open(src, "rb") as f:
        data = f.read()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fchmod(fd, os.stat(src).st_mode & 0o7777)
    finally:
        os.close(fd)


def undo_change(image):
    """Undoes the change recorded in WORKDIR/seed/undo.json, if any."""
    text = read_file(image.undo_file)
    if not text:
        return False
    undo = json.loads(text)
    tree = image.tree
    log("undoing the nightly change of an earlier run")
    old, newname = undo["renamed"]
    if os.path.exists(os.path.join(tree, newname)) and not os.path.exists(os.path.join(tree, old)):
        os.rename(os.path.join(tree, newname), os.path.join(tree, old))
    for p, size in undo["appended"]:
        path = os.path.join(tree, p)
        if os.path.getsize(path) > size:
            os.truncate(path, size)
    run(["rm", "-rf", "--one-file-system", os.path.join(tree, undo["new_dir"])])
    os.sync()
    os.unlink(image.undo_file)
    return True
