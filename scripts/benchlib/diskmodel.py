"""A model of one 7200 rpm SATA disk, applied to a traced request sequence.

Requests are served one at a time in the order the kernel issued them (no
command queueing, no drive cache). For a request of `n` bytes at byte offset
`off`, the head being at the end of the previous request:

  contiguous (off == head):   n / rate
  a short skip forward        (off - head) / rate + n / rate
  (0 < off - head <= track):  the head stays on its track and waits for the skipped
                              bytes to pass under it, as a drive reading through them
                              would; track = rate * one revolution (1.25 MB at 150 MB/s
                              and 7200 rpm)
  otherwise:                  settle + (full_stroke - settle) * sqrt(|off - head| / capacity)
                              + 30000 / rpm ms (half a revolution)
                              + n / rate

The defaults are the data sheet figures of common 3.5" 7200 rpm drives
(e.g. Seagate BarraCuda / WD Blue class: track-to-track ~1 ms, full stroke
~15 ms, average ~8.5 ms at a third of the stroke, sustained 150-200 MB/s);
the same numbers as the FUSE simulator (bench/hddsim/hddsim.c), so both tell
the same story. `capacity` is the span a full stroke covers: the image size.
"""

import math

SECTOR = 512


class DiskModel:
    def __init__(self, capacity, rpm=7200.0, settle_ms=1.0, full_stroke_ms=15.0, mbps=150.0):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.rpm, self.settle_ms, self.full_stroke_ms, self.mbps = rpm, settle_ms, full_stroke_ms, mbps

    def describe(self):
        return {"rpm": self.rpm, "settle_ms": self.settle_ms, "full_stroke_ms": self.full_stroke_ms,
                "mbps": self.mbps, "capacity_bytes": self.capacity}

    def seek_ms(self, distance):
        """Positioning time (seek + rotational latency) for a head move of distance bytes."""
        frac = min(1.0, abs(distance) / self.capacity)
        return (self.settle_ms + (self.full_stroke_ms - self.settle_ms) * math.sqrt(frac)
                + 30000.0 / self.rpm)

    @property
    def track_bytes(self):
        """Bytes passing under the head in one revolution."""
        return self.mbps * 1e6 * 60.0 / self.rpm

    def move_ms(self, distance):
        """Time to get from the head's position to a request distance bytes away."""
        if distance == 0:
            return 0.0
        if 0 < distance <= self.track_bytes:
            return self.transfer_ms(distance)
        return self.seek_ms(distance)

    def transfer_ms(self, nbytes):
        return nbytes / (self.mbps * 1e6) * 1000.0

    def timeline(self, reqs):
        """The modeled time (s) at which each request of reqs starts being served, and the end."""
        out, ms, head = [], 0.0, None
        for r in reqs:
            out.append(ms / 1000.0)
            off = r.sector * SECTOR
            if head is None:
                ms += self.settle_ms + 30000.0 / self.rpm
            else:
                ms += self.move_ms(off - head)
            n = r.sectors * SECTOR
            ms += self.transfer_ms(n)
            head = off + n
        return out, ms / 1000.0

    def time(self, reqs):
        """Seconds to serve reqs (objects with .sector and .sectors) in order; the
        head starts where the first request is (no seek is charged for it beyond
        its rotational latency and settle)."""
        ms, head = 0.0, None
        for r in reqs:
            off = r.sector * SECTOR
            if head is None:
                ms += self.settle_ms + 30000.0 / self.rpm
            else:
                ms += self.move_ms(off - head)
            n = r.sectors * SECTOR
            ms += self.transfer_ms(n)
            head = off + n
        return ms / 1000.0
