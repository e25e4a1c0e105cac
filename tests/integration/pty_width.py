"""Checks what tools printed on a terminal of a given width (saved by pty_run.py).

Usage: pty_width.py COLUMNS FILE...
Every line, and every refresh of a progress line (the text between carriage
returns), keeps within COLUMNS - 1 columns, so none wraps; progress counts are
named (files, rounds), never "items". Prints how many refreshes it checked.
"""
import re
import sys

columns, paths = int(sys.argv[1]), sys.argv[2:]
refreshes, errors = 0, []
for path in paths:
    text = open(path, "rb").read().decode("utf-8", "replace")
    # A terminal (without onlcr turned off) gives "\r\n" for "\n".
    for line in text.replace("\r\n", "\n").split("\n"):
        for seg in line.split("\r"):
            seg = seg.replace("\x1b[K", "")
            if re.match(r"oans-\w+ \w+: ", seg):
                refreshes += 1
                if re.search(r"\d items", seg):
                    errors.append(("a count of items", path, seg))
            if len(seg) > columns - 1:
                errors.append((len(seg), path, seg))
assert not errors, errors
print(refreshes)
