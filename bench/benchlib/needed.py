"""What a whole-file dedupe must read, and the links a run left.

A tool that shares whole files must read every file whose size another file
has, and need read no other. `needed_files` lists them; `extent_requests`
maps them with FS_IOC_FIEMAP into requests of their physical sectors, so the
trace module can cost one read of them in physical order (the floor of a
hardlink or whole-file cycle: once to hash, once more to compare).

`link_groups` records which names a run left as one inode: the hardlink
tools are compared on it (the same files linked, or not).
"""

import fcntl
import hashlib
import os
import stat
import struct

from .trace import SECTOR, Request

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2
FIEMAP_EXTENT_INLINE = 0x200
_BATCH = 64  # extents asked for per FIEMAP call


def walk_files(root):
    """(path, lstat) of every regular file under root, sorted by path."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out.append((p, st))
    return out


def needed_files(entries):
    """The entries (path, stat) a whole-file dedupe must read: a non-zero size
    another file has too. Several names of one inode count once."""
    seen, by_size = set(), {}
    for p, st in entries:
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        by_size.setdefault(st.st_size, []).append((p, st))
    return [e for size, group in sorted(by_size.items()) if size and len(group) > 1 for e in group]


def file_extents(path):
    """(physical byte offset, length) of every extent of the file with a
    known address (inline and delayed extents have none to read)."""
    out, start = [], 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while True:
            buf = bytearray(32 + 56 * _BATCH)
            struct.pack_into("=QQIIII", buf, 0, start, 0xFFFFFFFFFFFFFFFF, FIEMAP_FLAG_SYNC, 0, _BATCH, 0)
            fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
            n = struct.unpack_from("=I", buf, 20)[0]
            if n == 0:
                return out
            last = False
            for i in range(n):
                logical, physical, length, _, _, flags = struct.unpack_from("=QQQQQI", buf, 32 + 56 * i)
                if not flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_INLINE):
                    out.append((physical, length))
                start = logical + length
                last = last or bool(flags & FIEMAP_EXTENT_LAST)
            if last:
                return out
    finally:
        os.close(fd)


def extent_requests(extents):
    """Read requests of the sectors of (offset, length) extents, in any order
    (the trace module sorts and merges them into a floor)."""
    return [Request(0.0, off // SECTOR, (off % SECTOR + length + SECTOR - 1) // SECTOR, "R")
            for off, length in extents if length > 0]


def needed_data(root):
    """Files, bytes and read requests of what a whole-file dedupe of root must read."""
    files = needed_files(walk_files(root))
    extents = [x for p, _ in files for x in file_extents(p)]
    return {"files": len(files), "bytes": sum(st.st_size for _, st in files),
            "requests": extent_requests(extents)}


def link_groups(entries, root):
    """The names (relative to root) of every inode with more than one name
    under root, as a sorted list of sorted lists, and its figures."""
    by_inode = {}
    for p, st in entries:
        by_inode.setdefault((st.st_dev, st.st_ino), []).append(os.path.relpath(p, root))
    groups = sorted(sorted(names) for names in by_inode.values() if len(names) > 1)
    names = sum(len(g) for g in groups)
    digest = hashlib.sha1("\n".join("\0".join(g) for g in groups).encode()).hexdigest()
    return groups, {"groups": len(groups), "linked_names": names, "links_made": names - len(groups),
                    "digest": digest}


def group_differences(a, b, limit=10):
    """Names linked differently in two link_groups() results: a name's set of
    fellow names in a that differs from its set in b (at most limit)."""
    def fellows(groups):
        return {n: frozenset(g) for g in groups for n in g}
    fa, fb = fellows(a), fellows(b)
    out = []
    for n in sorted(set(fa) | set(fb)):
        if fa.get(n, frozenset([n])) != fb.get(n, frozenset([n])):
            out.append(n)
            if len(out) >= limit:
                break
    return out
