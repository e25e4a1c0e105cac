"""benchlib: what scripts/bench-dedupe and scripts/bench-scale share.

The scripts import it by path (they put scripts/ first on sys.path):

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
           ratios and growth exponents, table cells.

Each script keeps what only it does (the candidates, scenarios and reports of
bench-dedupe; the synthetic indexes and the scan tree of bench-scale). The
shell helpers of the integration tests (tests/integration/lib.sh) are the
shell counterpart and stay separate.
"""
