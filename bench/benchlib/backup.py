"""The nightly backup read before a warm-after-backup cycle, and the atime mount options.

A backup (borg, restic, rsync) or updatedb reads every directory and every file once
a night. On a relatime mount (what Debian mounts) the kernel writes an inode's atime
on a read when the atime is not newer than its mtime or ctime, or is older than 24
hours: on a real nightly read, a day after the last, that is every inode. Each
written atime rewrites the inode's item, so the filesystem sees every leaf changed.

On the benchmark's image the last read may be minutes old, so relatime alone would
write few atimes. The read therefore runs on a strictatime remount (atime written on
every read), put back to the run's option afterwards. Setting atimes back with
`touch -a -d` instead would change every ctime, which no backup does.

backup_read() reads the tree and counts the inodes whose atime moved, so the
harness can say that the read really wrote them (all under relatime, none under
noatime). With noatime the read writes nothing: that variation shows the cost of
the reads alone.

The harness's own checks after a run (contents, owners, `btrfs filesystem du`, link
groups) read every file and directory too. Under relatime they would write the atimes
of files copied since their last read, so the next run would meet a backup's changes
it was not meant to: quiet_checks() runs them on a noatime remount.
"""

import contextlib
import os
import shlex
import stat
import time

from .common import log, run

ATIME_MODES = ("relatime", "noatime")


def mount_options(atime, fs="btrfs"):
    """The mount options of the benchmark's image for --atime (nodiscard on btrfs)."""
    if atime not in ATIME_MODES:
        raise ValueError(f"atime mode {atime!r}: one of {', '.join(ATIME_MODES)}")
    return f"{atime},nodiscard" if fs == "btrfs" else atime


@contextlib.contextmanager
def quiet_checks(mnt, atime, remount=None):
    """Within it, reads of mnt write no atime: a noatime remount, put back to the
    run's option afterwards (nothing to do when the run's option is noatime)."""
    remount = remount or (lambda opts: run(["mount", "-o", f"remount,{opts}", mnt]))
    if atime not in ATIME_MODES:
        raise ValueError(f"atime mode {atime!r}: one of {', '.join(ATIME_MODES)}")
    if atime == "noatime":
        yield
        return
    remount("noatime")
    try:
        yield
    finally:
        remount(atime)


def atimes(root):
    """{path: atime in ns} of root and every directory and regular file below it (what
    the read reads; symlinks and special files are neither read nor counted)."""
    out = {root: os.lstat(root).st_atime_ns}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                out[p] = st.st_atime_ns
    return out


def written(before, after):
    """How many paths of before have another atime in after (gone ones not counted)."""
    return sum(1 for p, t in before.items() if p in after and after[p] != t)


def read_command(tree, readers=4):
    """The read: find lists every directory (reading it), cat reads every regular file."""
    t = shlex.quote(tree)
    return f"find {t} -type f -print0 | xargs -0 -r -P {readers} -n 200 cat > /dev/null"


def backup_read(mnt, tree, atime):
    """Reads every directory and file of tree once, as a nightly backup does; under
    relatime on a strictatime remount of mnt. Returns what the read did: seconds,
    inodes, and inodes whose atime it wrote (the harness logs both)."""
    before = atimes(tree)
    strict = atime == "relatime"
    if strict:
        run(["mount", "-o", "remount,strictatime", mnt])
    t0 = time.monotonic()
    try:
        run(["sh", "-c", read_command(tree)], quiet=True)
    finally:
        if strict:
            run(["mount", "-o", f"remount,{atime}", mnt])
    seconds = time.monotonic() - t0
    os.sync()
    after = atimes(tree)
    out = {"seconds": round(seconds, 2), "inodes": len(before), "atime_written": written(before, after),
           "remount": "strictatime" if strict else None}
    log(f"backup read: {out['inodes']} inodes in {seconds:.1f} s, atime written on {out['atime_written']}"
        + (" (strictatime remount)" if strict else ""))
    if strict and out["atime_written"] < out["inodes"]:
        log(f"warning: the backup read wrote the atime of only {out['atime_written']} of {out['inodes']} inodes")
    return out
