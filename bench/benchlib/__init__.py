"""benchlib: what bench/bench-dedupe and bench/bench-scale share.

The scripts import it by path (they put bench/ first on sys.path):

  common   errors (Fatal, Interrupted), logging to stderr (and a log file),
           running commands, sizes and counts, signals, the entry point,
           measure() (run, record an error or interrupt, release, save the
           JSON whatever happens), installing missing Debian packages;
  facts    the machine and the oans build a result was measured on;
  image    an image file on a `losetup --direct-io=on` loop device, made,
           mounted and released (idempotent, also after a killed run);
           cold caches;
  memcap   one cgroup v1/v2 memory cap per timed run, swap off for the run
           and back on afterwards;
  timing   /usr/bin/time around a command and its figures, medians,
           ratios and growth exponents, table cells;
  trace    the block requests the kernel issues to the test device
           (tracefs block:block_rq_issue, one instance per run), seeks;
  diskmodel  a 7200 rpm disk applied to a traced request sequence, and
           the physical-order floor of the same ranges;
  plot     an SVG of traced requests, offset against modeled time;
  seedtree, seed, seedrun  bench-scale's seed scenario (2 million files on
           btrfs): the tree, its pure parts (nightly change, strace counts,
           figures), and the run against duperemove.

treeread.c is the compiled reader of the read and stat-walk floors, built by
bench-dedupe at run time.

Each script keeps what only it does (the candidates, scenarios and reports of
bench-dedupe; the synthetic indexes and the scan tree of bench-scale). The
shell helpers of the integration tests (tests/integration/lib.sh) are the
shell counterpart and stay separate.
"""
