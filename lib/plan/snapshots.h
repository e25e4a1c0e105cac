// The snapshot policy (--snapshots): whether the plan shares data into files of
// read-only snapshots. Deduping a file of a snapshot rewrites the snapshot's tree
// leaves that hold it, which it shared with the live subvolume: metadata grows, and the
// data goes free only once every snapshot holding it is deduped too.
//   all   every destination, as found.
//   none  no destination in a read-only subvolume; the figures then tell what the
//         snapshots' expiry frees (frees_later_bytes).
//   auto  per data extent the plan would free: its references in snapshots are planned
//         only where its disk bytes exceed twice the metadata their files cost; a file
//         in a shared tree that then frees nothing is left alone too, and where the
//         net is still negative, nothing is planned in shared trees. The net is then
//         never negative.
// Without the index's census of references (space.h), auto cannot weigh: it leaves
// alone read-only snapshots and trees shared with them, where the scan said which.
#pragma once

#include <string>

#include "lib/plan/space.h"

namespace oans {

// Marks in st.left_alone the destinations the policy leaves alone (OpOfKey then leaves
// them out of their operations) and sets the space figures; `said` tells the user what
// was left alone and why ("" when nothing).
Status ApplySnapshotPolicy(PlanState& st, std::string* said);

}  // namespace oans
