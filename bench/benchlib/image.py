"""An image file on a loop device, mounted; and cold caches.

A LoopImage is made (create), attached with `losetup --direct-io=on` (attach),
formatted by the caller and mounted (mount), and released (release): unmount,
then detach every loop device backed by the image or by one of the extra
backing files given. release() is idempotent and looks the devices up again,
so it also clears what a run killed with SIGKILL left behind; it never
detaches a loop device backed by another file.
"""

import os
import re
import time

from .common import output, read_file, run


def drop_caches():
    """Cold caches: sync, then drop the page cache, dentries and inodes."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f)


def mount_dev(path, mountinfo_text=None):
    """(major, minor) of the filesystem mounted at path, from mountinfo: the
    superblock's device (btrfs's stat() gives a subvolume's), or None."""
    path = os.path.realpath(path)
    if mountinfo_text is None:
        with open("/proc/self/mountinfo") as f:
            mountinfo_text = f.read()
    found = None
    for line in mountinfo_text.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == path and ":" in fields[2]:
            major, minor = fields[2].split(":", 1)
            found = (int(major), int(minor))  # the last one: mounted over the others
    return found


def loop_devices_of(listing, backings):
    """The loop devices in `losetup -a` output whose backing file is one of backings."""
    devs = set()
    for line in listing.splitlines():
        m = re.match(r"(/dev/loop\d+):.*\((.*)\)", line)
        if m and m.group(2) in backings:
            devs.add(m.group(1))
    return devs


class LoopImage:
    def __init__(self, img, mnt):
        self.img = img
        self.mnt = mnt
        self.loopdev = None
        self.loop_dio = None

    def create(self, size):
        """A new sparse image file of size bytes (an old one is replaced)."""
        if os.path.exists(self.img):
            os.unlink(self.img)
        with open(self.img, "wb") as f:
            f.truncate(size)

    def attach(self, backing=None):
        """Attaches backing (default: the image) with direct I/O, else buffered.

        Returns None, or why direct I/O could not be had (the device is buffered then).
        loop_dio is the device's own word on it ("1" for direct I/O)."""
        backing = backing or self.img
        p = run(["losetup", "--direct-io=on", "-f", "--show", backing], check=False, capture=True)
        failure = None
        if p.returncode == 0:
            self.loopdev = p.stdout.strip()
        else:
            failure = p.stderr.strip()
            self.loopdev = output(["losetup", "-f", "--show", backing])
        self.loop_dio = read_file(f"/sys/block/{os.path.basename(self.loopdev)}/loop/dio")
        return failure

    def mount(self, options, check=True):
        """Mounts the loop device on mnt; the CompletedProcess (check=False: may fail)."""
        return run(["mount", "-o", options, self.loopdev, self.mnt], check=check)

    def unmount(self):
        """Unmounts mnt, three tries a second apart, then lazily."""
        for _ in range(3):
            if not is_mounted(self.mnt):
                break
            if run(["umount", self.mnt], check=False, capture=True).returncode != 0:
                time.sleep(1)
        if is_mounted(self.mnt):
            run(["umount", "-l", self.mnt], check=False)

    def release(self, other_backings=()):
        """Idempotent: unmounts, then detaches the loop devices of this image only."""
        self.unmount()
        devs = set([self.loopdev] if self.loopdev else [])
        devs |= loop_devices_of(output(["losetup", "-a"], check=False),
                                [self.img] + list(other_backings))
        for dev in sorted(devs):
            run(["losetup", "-d", dev], check=False)
        self.loopdev = None
