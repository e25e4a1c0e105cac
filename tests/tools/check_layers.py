#!/usr/bin/env python3
"""Keeps the layers of lib/ pointing down: a file may include a header of its own folder
or of a lower layer, never of a higher one, and never of another folder of its own layer.

    tools/  ->  lib/run/  ->  lib/apply/, lib/plan/, lib/scan/  ->  lib/format/, lib/btrfs/  ->  lib/base/

The exceptions are listed below, each with its reason (docs/architecture.md, "Layers").
Tests follow the layer they test (tests/lib/scan/ is scan's): never up, but sideways,
since a test may build its input with a module beside it. tests/lib/test_util.* serve
every test, so they stay at format.
Prints every offending include (file:line) and exits 1 if there is one.

Usage: check_layers.py [TOP]   (default: the repository holding this script)
"""
import os
import re
import sys

RANK = {"base": 0, "format": 1, "btrfs": 1, "scan": 2, "plan": 2, "apply": 2, "run": 3, "tools": 4}

# (including folder, included header): why the include may point sideways or up.
EXCEPTIONS = {
    # Sys, the one system interface tests inject faults into, wraps the btrfs ioctls;
    # lib/btrfs/search.h declares them and includes nothing but lib/base/status.h.
    ("base", "lib/btrfs/search.h"): "Sys wraps the btrfs ioctls",
    ("base", "lib/btrfs/space.h"): "Sys wraps the btrfs ioctls",
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"(lib/([a-z_]+)/[^"]+)"')


def folder_of(rel):
    parts = rel.split("/")
    if parts[0] == "tools":
        return "tools"
    if parts[0] == "lib" and len(parts) > 2:
        return parts[1]
    return None


def test_folder_of(rel):
    parts = rel.split("/")
    if parts[1] == "tools":
        return "tools"
    return parts[2] if len(parts) > 3 else "format"  # tests/lib/test_util.*


def test_offences(top):
    for base in ("tests/lib", "tests/tools"):
        for root, _, files in os.walk(os.path.join(top, base)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                rel = os.path.relpath(os.path.join(root, name), top)
                own = test_folder_of(rel)
                if own not in RANK:
                    yield f"{rel}: folder {own!r} has no layer (tests/tools/check_layers.py)"
                    continue
                with open(os.path.join(top, rel), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(2) != own and RANK.get(m.group(2), 0) > RANK[own]:
                            yield f"{rel}:{number}: includes {m.group(1)}, which points up ({own} -> {m.group(2)})"


def offences(top):
    for base in ("lib", "tools"):
        for root, _, files in os.walk(os.path.join(top, base)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, top)
                own = folder_of(rel)
                if own not in RANK:
                    yield f"{rel}: folder {own!r} has no layer (tests/tools/check_layers.py)"
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header, target = m.group(1), m.group(2)
                        if target == own or (own, header) in EXCEPTIONS:
                            continue
                        if target not in RANK:
                            yield f"{rel}:{number}: includes {header}, a folder with no layer"
                        elif RANK[target] >= RANK[own]:
                            way = "up" if RANK[target] > RANK[own] else "sideways"
                            yield f"{rel}:{number}: includes {header}, which points {way} ({own} -> {target})"


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = list(offences(top)) + list(test_offences(top))
    for o in found:
        print(o)
    if found:
        print(f"check_layers: {len(found)} include(s) against the layers")
        return 1
    print("check_layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
