// The generations of `oans run` in its state directory. Generation N is
//   gen-N.idx             the extent index of the scan (the next scan's --previous)
//   plan-N.capnp          the dedupe plan made from it (the generation is complete once
//                         it exists)
//   plan-N.capnp.journal  oans-apply's journal of that plan
//   applied-N             its plan was applied to the end
//   run-N.json            the record of the run that made it (lib/run/record.h)
// with N written in six or more digits. Older generations are removed only after a new
// one is complete, keeping the newest `keep` complete ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace oans {

struct Generation {
  uint64_t number = 0;
  bool index = false;  // gen-N.idx exists
  bool plan = false;   // plan-N.capnp exists
  bool journal = false;
  bool applied = false;  // applied-N: its plan was applied to the end, nothing left out
  bool record = false;   // run-N.json
};

std::string IndexName(uint64_t n);
std::string PlanName(uint64_t n);
std::string JournalName(uint64_t n);
std::string AppliedName(uint64_t n);
std::string RecordName(uint64_t n);

// Marks generation n's plan as applied to the end (applied-N, created beside it).
Status MarkApplied(int state_fd, uint64_t n);

// The generations present in the state directory, oldest first. Names that are not a
// generation's are ignored.
Result<std::vector<Generation>> ListGenerations(int state_fd);

// The newest generation with an index (an interrupted scan's index counts: oans-scan
// accepts it as --previous), or null.
const Generation* NewestIndex(const std::vector<Generation>& gens);

// Removes the files of every generation older than the `keep` newest complete ones and
// says which generations went in `removed`. Nothing goes when fewer are complete.
Status RemoveOldGenerations(int state_fd, uint32_t keep, std::vector<uint64_t>* removed);

}  // namespace oans
