"""Timing a command with /usr/bin/time, and the figures made of the timings.

A run is `/usr/bin/time -o FILE -f FORMAT COMMAND...`: FORMAT is
TIME_FORMAT ('%e %U %S %M', wall, user and sys seconds and peak RSS in KiB)
or TIME_FORMAT_INPUTS (the same and %I, filesystem inputs in 512-byte
blocks). /usr/bin/time writes a line such as 'Command exited with non-zero
status 1' before the figures; parse_time() keeps those as notes.
"""

import math
import re
import statistics

TIME_FORMAT = "%e %U %S %M"
TIME_FORMAT_INPUTS = "%e %U %S %M %I"


def time_argv(time_file, time_format, argv):
    """argv run under /usr/bin/time, its figures written to time_file."""
    return ["/usr/bin/time", "-o", time_file, "-f", time_format] + [str(a) for a in argv]


def parse_time(text):
    """(figures, notes) of what /usr/bin/time wrote with one of the formats above.

    figures: {wall, user, sys, maxrss_kib} and inputs_bytes with %I, or None if
    the last line is not figures; notes: the lines before it."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    m = re.fullmatch(r"([\d.]+) ([\d.]+) ([\d.]+) (\d+)(?: (\d+))?", lines[-1].strip()) if lines else None
    notes = lines[:-1]
    if not m:
        return None, notes
    fig = {"wall": float(m.group(1)), "user": float(m.group(2)), "sys": float(m.group(3)),
           "maxrss_kib": int(m.group(4))}
    if m.group(5) is not None:
        fig["inputs_bytes"] = int(m.group(5)) * 512
    return fig, notes


def median_of(rows, key):
    """Median of row[key] over the rows that have it (not None), or None."""
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def spread(values, prefix):
    """{prefix_median, prefix_min, prefix_max} of a non-empty list."""
    return {f"{prefix}_median": statistics.median(values), f"{prefix}_min": min(values),
            f"{prefix}_max": max(values)}


def ratio(a, b, digits=None):
    """a / b (rounded to digits if given); None if a is missing or b is missing or zero."""
    if a is None or not b:
        return None
    return a / b if digits is None else round(a / b, digits)


def growth_exponent(value_ratio, size_ratio):
    """log(value ratio) / log(size ratio): 1.0 grows linearly, 0 is flat; None if undefined."""
    if value_ratio is None or size_ratio == 1 or value_ratio <= 0:
        return None
    return math.log(value_ratio) / math.log(size_ratio)


def cell(value, spec):
    """value formatted with spec ('8.2f'), or '-' right-aligned to spec's width."""
    if value is None:
        return format("-", ">" + spec.split(".")[0])
    return format(value, spec)
