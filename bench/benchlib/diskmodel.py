"""A model of one 7200 rpm SATA disk, applied to a traced request sequence.

Requests are served one at a time. Reads are served in the order the kernel issued them:
whoever asked for them waits for them (a compare, a lookup, read-ahead of a file being
read), so a real disk gets them in that order too. Writes are not: the kernel issues a
commit's or writeback's writes all at once without waiting for any (the traces show a
thousand within a quarter of a second), and a real disk, slower than the loop device the
trace comes from, would have them wait in the I/O scheduler's queue and in its own command
queue, served there by position, not by arrival. btrfs metadata is written twice (DUP):
each block goes to two places far apart, one request after the other, and served in issue
order every such pair would cost two seeks. So writes are held, as mq-deadline holds them
while reads are flowing, and served together in one sweep (ascending from the head, then
from the lowest: C-LOOK) once `write_queue` of them wait (32: the NCQ depth of a SATA
disk), once `writes_starved_reads` reads (32: mq-deadline's two read batches of 16) have
been served since the oldest of them came, before the first request after a cache flush
(whoever flushed waited for them: a commit's tree blocks before its superblock, a
syncfs before the reads that follow it), or at the end. No drive write cache is assumed
(that would defer writes further). `write_queue=1` serves everything in issue order.
Requests that are neither reads nor writes (discards) are served in issue order, as
reads are. This is a favourable case for writes; the report gives the serial figure
beside it, and the harness's --hdd-write-queue shows how the figures move with it.

For a request of `n` bytes at byte offset `off`, the head being at the end of the
previous request served:

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
the same numbers as the FUSE simulator (bench/hddsim/hddsim.c), which serves
requests strictly in arrival order, as this model does with write_queue=1.
`capacity` is the span a full stroke covers: the image size.
"""

import math

SECTOR = 512


class DiskModel:
    def __init__(self, capacity, rpm=7200.0, settle_ms=1.0, full_stroke_ms=15.0, mbps=150.0,
                 write_queue=32, writes_starved_reads=32):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        if write_queue < 1 or writes_starved_reads < 1:
            raise ValueError("write_queue and writes_starved_reads must be at least 1")
        self.capacity = capacity
        self.rpm, self.settle_ms, self.full_stroke_ms, self.mbps = rpm, settle_ms, full_stroke_ms, mbps
        self.write_queue, self.writes_starved_reads = write_queue, writes_starved_reads

    def describe(self):
        return {"rpm": self.rpm, "settle_ms": self.settle_ms, "full_stroke_ms": self.full_stroke_ms,
                "mbps": self.mbps, "capacity_bytes": self.capacity, "write_queue": self.write_queue,
                "writes_starved_reads": self.writes_starved_reads}

    @staticmethod
    def from_description(d):
        """The model describe() gave d for (results made before writes were queued: write_queue 1)."""
        return DiskModel(d["capacity_bytes"], d["rpm"], d["settle_ms"], d["full_stroke_ms"], d["mbps"],
                         d.get("write_queue", 1), d.get("writes_starved_reads", 32))

    def serial(self):
        """The same disk serving every request in issue order."""
        return DiskModel(self.capacity, self.rpm, self.settle_ms, self.full_stroke_ms, self.mbps, 1,
                         self.writes_starved_reads)

    def schedule(self, reqs):
        """The indices of reqs in the order the disk serves them (see the module's doc)."""
        if self.write_queue <= 1:
            return list(range(len(reqs)))
        order, held, head, reads_since = [], [], None, 0

        def sweep():
            nonlocal head
            held.sort(key=lambda i: reqs[i].sector)
            k = 0
            if head is not None:
                while k < len(held) and reqs[held[k]].sector < head:
                    k += 1
            batch = held[k:] + held[:k]
            order.extend(batch)
            head = reqs[batch[-1]].end
            held.clear()

        for i, r in enumerate(reqs):
            if held and getattr(r, "after_flush", False):
                sweep()  # the flush waited for them
            if r.is_write:
                if not held:
                    reads_since = 0
                held.append(i)
                if len(held) >= self.write_queue:
                    sweep()
                continue
            order.append(i)
            head = r.end
            if held:
                reads_since += 1
                if reads_since >= self.writes_starved_reads:
                    sweep()
        if held:
            sweep()
        return order

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
        """The modeled time (s) at which each request of reqs starts being served (in the
        order of reqs), and the end."""
        out, ms, head = [0.0] * len(reqs), 0.0, None
        for i in self.schedule(reqs):
            r = reqs[i]
            out[i] = ms / 1000.0
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
        """Seconds to serve reqs (trace.Request), in the order schedule() gives; the head
        starts where the first request served is (no seek is charged for it beyond its
        rotational latency and settle)."""
        return self.timeline(reqs)[1]
