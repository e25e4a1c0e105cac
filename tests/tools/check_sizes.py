#!/usr/bin/env python3
"""Keeps lib/ easy to read: no function over 80 lines and no file over 400 lines, except
where the file's opening comment says why (a line containing "size:" followed by the
reason, e.g. "// size: one table of every errno ..."). Functions are found by their
braces: a line ending in "{" that opens a body at namespace or class level, up to the
line that closes it. Prints every offender and exits 1 if there is one.

Usage: check_sizes.py [LIB_DIR]   (default: lib/ beside this script's repository)
"""
import os
import re
import sys

MAX_FUNCTION = 80
MAX_FILE = 400

HEAD = re.compile(r"^\s*(?:[\w:<>,~*&\[\]\s]+?\s)?[~\w:]+\s*\([^;]*\)\s*(?:const)?\s*(?:override)?\s*(?:noexcept)?\s*(?:->\s*[\w:<>*&\s]+)?\s*(?::[^{]*)?\{\s*$")


def waiver(lines):
    for line in lines[:40]:
        if "size:" in line and line.lstrip().startswith("//"):
            return True
    return False


def functions(lines):
    """(name line, length) of each function body, counted from the line that opens it."""
    out = []
    depth = 0
    start = None
    start_depth = 0
    for i, line in enumerate(lines):
        code = re.sub(r'"(?:\\.|[^"\\])*"', '""', line.split("//")[0])
        if start is None and HEAD.match(code) and not re.match(r"^\s*(if|for|while|switch|else|do|namespace|class|struct|enum|union)\b", code):
            start, start_depth = i, depth
        depth += code.count("{") - code.count("}")
        if start is not None and depth <= start_depth:
            out.append((start + 1, i - start + 1, lines[start].strip()))
            start = None
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lib = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "lib")
    bad = []
    for dirpath, _, names in os.walk(lib):
        for n in sorted(names):
            if not n.endswith((".h", ".cc")):
                continue
            p = os.path.join(dirpath, n)
            lines = open(p, encoding="utf-8", errors="replace").read().splitlines()
            if waiver(lines):
                continue
            if len(lines) > MAX_FILE:
                bad.append(f"{p}: {len(lines)} lines (at most {MAX_FILE}, or a 'size:' reason in its opening comment)")
            for at, length, head in functions(lines):
                if length > MAX_FUNCTION:
                    bad.append(f"{p}:{at}: function of {length} lines (at most {MAX_FUNCTION}): {head[:70]}")
    for b in bad:
        print(b)
    print(f"{len(bad)} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
