"""Disk order at a glance: an SVG of traced block requests, offset against time.

One panel per run (a tool, or the physical-order floor), stacked, each with
its own time axis: x is the modeled disk time (benchlib/diskmodel.py, the
requests served in the order the kernel issued them), y the request's offset
on the device, 0 at the bottom. Requests are binned into cells of a fixed
grid (so the file stays small whatever the number of requests): reads blue,
writes red, both purple. Phase markers of the oans chain are dashed lines.
Plain SVG text, no dependencies.
"""

from xml.sax.saxutils import escape

SECTOR = 512
COLS, ROWS = 300, 60
COLOURS = {1: "#1f5fbf", 2: "#c8321e", 3: "#7a3d9a"}


def cells(reqs, starts, total_s, capacity):
    """{(col, row): 1 read | 2 write | 3 both} for requests at modeled start times."""
    out = {}
    span = total_s or 1.0
    for r, t in zip(reqs, starts):
        col = min(COLS - 1, int(t / span * COLS))
        row = min(ROWS - 1, int(r.sector * SECTOR / capacity * ROWS))
        out[(col, row)] = out.get((col, row), 0) | (2 if r.is_write else 1)
    return out


def panel_svg(y0, width, height, label, reqs, model, phases=()):
    """The SVG elements of one panel whose top is at y0. phases: (name, first request index)."""
    starts, total = model.timeline(reqs)
    left, right = 60, 10
    w, h = width - left - right, height - 40
    cw, rh = w / COLS, h / ROWS
    el = [f'<text x="{left}" y="{y0 + 14}" font-size="13">{escape(label)}</text>',
          f'<rect x="{left}" y="{y0 + 20}" width="{w}" height="{h}" fill="#fafafa" stroke="#888"/>']
    for (c, r), kind in sorted(cells(reqs, starts, total, model.capacity).items()):
        x = left + c * cw
        y = y0 + 20 + h - (r + 1) * rh
        el.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw:.2f}" height="{rh:.2f}" fill="{COLOURS[kind]}"/>')
    bounds = [i for _, i in phases] + [len(reqs)]
    for k, (name, i) in enumerate(phases):
        if i < len(starts) and total:
            # (the model may serve a phase's first request after others of it: held writes)
            x = left + min(starts[i:max(i + 1, bounds[k + 1])]) / total * w
            el.append(f'<line x1="{x:.1f}" y1="{y0 + 20}" x2="{x:.1f}" y2="{y0 + 20 + h}" stroke="#333"'
                      f' stroke-dasharray="4,3"/><text x="{x + 3:.1f}" y="{y0 + 32}" font-size="11">{escape(name)}</text>')
    gib = model.capacity / (1 << 30)
    el += [f'<text x="{left - 4}" y="{y0 + 20 + h}" font-size="11" text-anchor="end">0</text>',
           f'<text x="{left - 4}" y="{y0 + 30}" font-size="11" text-anchor="end">{gib:.0f} GiB</text>',
           f'<text x="{left}" y="{y0 + 20 + h + 13}" font-size="11">0 s</text>',
           f'<text x="{left + w}" y="{y0 + 20 + h + 13}" font-size="11" text-anchor="end">'
           f'{total:.1f} s modeled, {len(reqs)} requests</text>']
    return el


def svg(title, panels, model, width=900, panel_height=190):
    """panels: (label, requests in issue order, phases as (name, first index)); the SVG text.
    Each request is drawn at the modeled time it is served (DiskModel.timeline)."""
    height = 30 + panel_height * len(panels)
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
          f' font-family="sans-serif">', f'<text x="10" y="18" font-size="15">{escape(title)}</text>']
    for k, (label, reqs, phases) in enumerate(panels):
        el += panel_svg(30 + k * panel_height, width, panel_height, label, reqs, model, phases)
    el.append("</svg>")
    return "\n".join(el) + "\n"


def phase_starts(reqs, marks, prefix="phase "):
    """(name, index of the first request at or after the marker) of each phase marker."""
    out, i = [], 0
    for ts, text in marks:
        if not text.startswith(prefix):
            continue
        while i < len(reqs) and reqs[i].ts < ts:
            i += 1
        out.append((text[len(prefix):], i))
    return out
