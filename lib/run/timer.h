// When systemd next starts a state directory's unit: the template timer oans@NAME.timer,
// NAME the state directory's own name (the units keep it in /var/lib/oans/NAME).
#pragma once

#include <string>

namespace oans {

// The unit's next start as systemd says it ("Thu 2026-12-03 01:30:00 UTC"), or "" when
// systemd does not run, knows no such timer, or has none pending. Asks `systemctl show`;
// $OANS_SYSTEMCTL names another systemctl.
std::string NextTimer(const std::string& state_dir);

// The timer's unit name for a state directory, or "" when its name needs escaping.
std::string TimerUnit(const std::string& state_dir);

}  // namespace oans
