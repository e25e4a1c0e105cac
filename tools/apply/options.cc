#include "tools/apply/options.h"

#include "tools/common/cli.h"
#include "tools/common/summary.h"

namespace oans::cli {

void AddApplyOptions(CLI::App& app, ApplyCommandLine* c) {
  app.add_option("plan", c->plan_path, "Plan file from oans-plan ('-' for standard input)")->required()->type_name("PLAN");
  app.add_flag("-n,--dry-run", c->o.dry_run,
               "Check every file and print the operations as JSON lines on stdout; change nothing");
  app.add_option("--prefetch", c->prefetch, "Read each round into the page cache before deduping it: on or off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--storage", c->storage,
                 "Storage kind: auto, ssd or hdd (default auto: as the plan records it, else sysfs plus a seek "
                 "test). On ssd the next round's files are opened while a round is read ahead; on hdd after it, and "
                 "(with prefetch) the filesystem is committed between rounds once 512 MiB were deduped, so that the "
                 "disk sweeps")
      ->check(CLI::IsMember({"auto", "ssd", "hdd"}));
  app.add_option("--progress", c->progress, "Progress on stderr: auto, tty, json or none")
      ->check(CLI::IsMember({"auto", "tty", "json", "none"}));
  AddDuration(app, "--deadline", &c->deadline_s,
              "Stop cleanly after the round during which DURATION (e.g. 45m, 2h) has passed");
  app.add_option("--until", c->until,
                 "Stop cleanly after the round during which local time HH:MM (the next one) or 'YYYY-MM-DD HH:MM' "
                 "is reached. A bare HH:MM more than " + std::to_string(kMaxUntilAheadHours) +
                     "h ahead is refused (a late start would run for a day); give the date to mean it")
      ->type_name("TIME");
  AddSize(app, "--max-rate", &c->o.max_rate, "Limit reads (prefetch, hardlink compare) to RATE bytes per second (e.g. 50M)")
      ->type_name("RATE");
  app.add_option("--io-class", c->io_class, "I/O scheduling class: best-effort (default) or idle")
      ->check(CLI::IsMember({"best-effort", "idle"}));
  app.add_option("--journal", c->journal_path,
                 "Record finished rounds in FILE (default PLAN.journal); a later run of the same plan resumes")
      ->type_name("FILE");
  app.add_option("--link", c->link,
                 "reflink (default): share data with FIDEDUPERANGE on btrfs/XFS. hard: for filesystems without "
                 "reflink (ext4...), replace each whole-file duplicate by a hardlink to its source after a "
                 "byte-for-byte compare (hidden name, link, exchange; never across filesystems). Only files with the "
                 "same owner, group, permissions, extended attributes/ACLs and mtime, reached by the same users, are "
                 "linked (see --link-relax), never "
                 "setuid/setgid files, and never a file another process has open for writing (file leases). "
                 "RISK: hardlinked files are one file from then on; writing to one changes all")
      ->check(CLI::IsMember({"reflink", "hard"}));
  app.add_option("--link-relax", c->relax,
                 "With --link=hard, also link files that differ in: owner (uid and gid), mode (permission bits), "
                 "xattrs (extended attributes and ACLs), mtime, or reach (who can search the directories above "
                 "each name; relaxed, a user may read or write through the other name a file she could not reach); "
                 "a comma-separated list. By default files are linked only when all of these are the same; setuid "
                 "and setgid files, files with other hardlinks and immutable or append-only sources never are")
      ->delimiter(',')
      ->check(CLI::IsMember({"owner", "mode", "xattrs", "mtime", "reach"}));
  app.add_flag("--no-journal", c->no_journal, "Do not keep a journal: every run starts from the first round");
  app.add_flag("-q,--quiet", c->quiet, "Print only errors and the summary's problems");
  app.add_flag("--json", c->json, kJsonHelp);
  AddSummaryFile(app, &c->summary_file);
}

}  // namespace oans::cli
