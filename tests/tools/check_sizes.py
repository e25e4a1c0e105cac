#!/usr/bin/env python3
"""Keeps lib/ and tools/ easy to read: no function over 80 lines and no file over 400
lines, except where the file's opening comment says why (a line containing "size:"
followed by the reason, e.g. "// size: one table of every errno ..."). Functions are found
by their braces: a signature at namespace or class level (on one line or spread over
several) whose last line ends in "{", up to the line that closes the body. A function's
length counts from the first line of its signature to its closing brace. Prints every
offender and exits 1 if there is one.

Usage: check_sizes.py [DIR...]   (default: lib/ and tools/ of this script's repository)
"""
import os
import re
import sys

MAX_FUNCTION = 80
MAX_FILE = 400

HEAD = re.compile(r"^\s*(?:[\w:<>,~*&\[\]\s]+?\s)?[~\w:]+\s*\([^;]*\)\s*(?:const)?\s*(?:override)?\s*(?:noexcept)?\s*(?:->\s*[\w:<>*&\s]+)?\s*(?::[^{]*)?\{\s*$", re.S)
NOT_FUNCTION = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(if|for|while|switch|else|do|namespace|class|struct|enum|union|extern)\b")


def waiver(lines):
    for line in lines[:40]:
        if "size:" in line and line.lstrip().startswith("//"):
            return True
    return False


def code_lines(lines):
    """Each line without comments and with string and character literals emptied."""
    in_block = False
    for line in lines:
        out = ""
        i = 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block, i = False, end + 2
                continue
            m = re.match(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', line[i:])
            if m:
                out += '""'
                i += m.end()
            elif line.startswith("//", i):
                break
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            else:
                out += line[i]
                i += 1
        yield out


def functions(lines):
    """(first line, length, signature) of each function, from the first line of its
    signature to the line that closes its body."""
    out = []
    depth = 0
    start = None
    start_depth = 0
    pending = None  # first line of the declaration being read at namespace or class level
    for i, code in enumerate(code_lines(lines)):
        stripped = code.strip()
        if start is None:
            if stripped.startswith("#") or re.match(r"^(public|private|protected)\s*:$", stripped):
                stripped = ""
            if stripped and pending is None:
                pending = i
            if stripped.endswith("{") and pending is not None:
                head = " ".join(c.strip() for c in list(code_lines(lines[pending:i + 1])))
                if HEAD.match(head) and not NOT_FUNCTION.match(head):
                    start, start_depth = pending, depth
            if stripped.endswith((";", "{", "}")) or re.search(r"[;{}]\s*$", stripped):
                pending = None
        depth += code.count("{") - code.count("}")
        if start is not None and depth <= start_depth:
            out.append((start + 1, i - start + 1, lines[start].strip()))
            start = None
            pending = None
    return out


def sources(dirs):
    for d in dirs:
        for dirpath, subdirs, names in os.walk(d):
            subdirs.sort()
            for n in sorted(names):
                if n.endswith((".h", ".cc")):
                    yield os.path.join(dirpath, n)


def main():
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs = sys.argv[1:] or [os.path.join(top, "lib"), os.path.join(top, "tools")]
    bad = []
    for p in sources(dirs):
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
