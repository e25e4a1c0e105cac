"""Errors, logging, commands, sizes, signals, the run sequence and packages of the benchmarks."""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Fatal(Exception):
    """An error that ends the benchmark with a message (after cleanup)."""


class Interrupted(BaseException):
    """SIGTERM/SIGHUP, handled like Ctrl-C."""


_log_file = None


def set_log_file(path):
    """Every later log line is appended to path too (None: stderr only)."""
    global _log_file
    _log_file = path


def log(msg):
    line = time.strftime("%H:%M:%S ") + msg
    print(line, file=sys.stderr, flush=True)
    if _log_file:
        with open(_log_file, "a") as f:
            f.write(line + "\n")


def quoted(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def run(argv, check=True, capture=False, quiet=False, **kw):
    """Runs a command (list) and returns the CompletedProcess; text output."""
    if not quiet:
        log("$ " + quoted(argv))
    p = subprocess.run([str(a) for a in argv], text=True,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None, **kw)
    if check and p.returncode != 0:
        err = (p.stderr or "").strip() if capture else ""
        raise Fatal(f"command failed ({p.returncode}): {' '.join(map(str, argv))}"
                    + (f"\n{err}" if err else ""))
    return p


def output(argv, check=True):
    return run(argv, check=check, capture=True, quiet=True).stdout.strip()


def read_file(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def timestamp():
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# ------------------------------------------------------------ sizes and counts

def parse_size(text):
    """'512M', '4 GiB', '1.5G' -> bytes (binary units); argparse type."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M, 4G)")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(float(m.group(1)) * mult[m.group(2).upper()])


def parse_count(text):
    """'100000', '100k', '1M' -> a count (decimal units); argparse type."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (use e.g. 100000, 100k, 1M)")
    return int(m.group(1)) * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2).lower()]


def human(n):
    """Bytes in binary units, one decimal ('-' for None)."""
    if n is None:
        return "-"
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"]:
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def count_text(n):
    """A count the way parse_count reads it back: 100k, 1M, 1234."""
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


# ------------------------------------------------------------ process setup

def require_root(why):
    if os.geteuid() != 0:
        raise Fatal(f"run as root ({why})")


def make_workdir(workdir, option):
    """Creates the work directory; refuses tmpfs (the images must be on disk)."""
    os.makedirs(workdir, exist_ok=True)
    if output(["stat", "-f", "-c", "%T", workdir], check=False) == "tmpfs":
        raise Fatal(f"{option} {workdir} is on tmpfs; use a disk-backed directory")


def raise_on_signals():
    """SIGTERM and SIGHUP raise Interrupted, so cleanup runs as on Ctrl-C."""
    def on_signal(signum, frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def measure(results, body, release, save):
    """Runs body(), which returns an exit status (None: 0), then release() and save()
    whatever happens. Ctrl-C, SIGTERM/SIGHUP and Fatal are logged and recorded in results
    ("interrupted", "error") and give the exit status 130 or 1. Returns the exit status."""
    exit_code = 0
    try:
        exit_code = body() or 0
    except (KeyboardInterrupt, Interrupted) as e:
        log(f"interrupted ({str(e) or 'Ctrl-C'}); cleaning up")
        results["interrupted"] = True
        exit_code = 130
    except Fatal as e:
        log(f"error: {e}")
        results["error"] = str(e)
        exit_code = 1
    finally:
        try:
            release()
        finally:
            save()
    return exit_code


def write_json(path, data):
    """Writes the results (its directory made if needed) and logs where they went."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1, default=str)
    log(f"results: {path}")


def entry_point(prog, main):
    """Runs main(argv) and exits with its status; a Fatal is one line on stderr."""
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(1)


# ------------------------------------------------------------ packages

def missing_packages(wants):
    """The packages of (present, package) pairs whose check failed, once each, in order."""
    need = []
    for present, pkg in wants:
        if not present and pkg not in need:
            need.append(pkg)
    return need


def install_packages(need):
    """apt-get install of the packages (after apt-get update if the first try fails)."""
    if not need:
        return
    log("installing: " + " ".join(need))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + need
    if run(cmd, check=False, env=env).returncode != 0:
        run(["apt-get", "update", "-q"], env=env)
        run(cmd, env=env)


def find_tools(bindir, names):
    """{name: path} of the executables found under bindir (the shortest path of each)."""
    found = {}
    for dirpath, _, files in os.walk(bindir):
        for name in names:
            p = os.path.join(dirpath, name)
            if name in files and os.path.isfile(p) and os.access(p, os.X_OK):
                if name not in found or len(p) < len(found[name]):
                    found[name] = p
    return found
