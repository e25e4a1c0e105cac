"""The machine and the oans build behind a benchmark's figures (for the JSON)."""

import os
import re
import shutil

from .common import REPO, output, read_file


def machine_facts():
    mem = read_file("/proc/meminfo", "")
    m = re.search(r"MemTotal:\s+(\d+) kB", mem)
    cpu = re.search(r"model name\s*:\s*(.*)", read_file("/proc/cpuinfo", "") or "")
    pretty = re.search(r'PRETTY_NAME="?([^"\n]*)', read_file("/etc/os-release", "") or "")
    return {"kernel": os.uname().release, "nproc": os.cpu_count(),
            "mem_total_bytes": int(m.group(1)) * 1024 if m else None,
            "cpu": cpu.group(1) if cpu else None,
            "os": pretty.group(1) if pretty else None,
            "btrfs_progs": output(["btrfs", "--version"], check=False) if shutil.which("btrfs") else None,
            "hostname": os.uname().nodename}


def git_describe(source):
    """`git describe --always --dirty --tags` of a work tree, or None."""
    return output(["git", "-C", source, "describe", "--always", "--dirty", "--tags"], check=False) or None


def oans_facts(tools, bindir):
    """The commit the binaries were built from: the git work tree of the build's source
    directory (CMakeCache.txt), else this repository."""
    cache = read_file(os.path.join(bindir, "CMakeCache.txt"), "") or ""
    m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M)
    source = m.group(1) if m else REPO
    git = ["git", "-C", source]
    commit = output(git + ["rev-parse", "HEAD"], check=False) or None
    status = output(git + ["status", "--porcelain", "--untracked-files=no"], check=False) if commit else ""
    facts = {"source_dir": source, "commit": commit, "describe": git_describe(source),
             "dirty": bool(status) if commit else None, "bin_dir": bindir, "binaries": tools}
    for name, path in tools.items():
        facts[name.replace("-", "_") + "_version"] = output([path, "--version"], check=False)
    return facts
