// Turns verdicts into label changes: only changes are planned, only our mark is ever removed (a
// foreign value under our key stays), and an unknown verdict changes nothing. How many of the
// changes are written, how fast and whether at all (dry-run) is the LabelWriter's business
// (controller/label_writer.h), which holds every write limit in one place.
#pragma once

#include <cstddef>
#include <vector>

#include "rules/decider.h"

namespace ds {

struct PlanNode {
  std::string_view name;
  bool marked = false;  // carries our mark (Mark::IsOn)
};

struct LabelChange {
  size_t node = 0;   // index into the planned nodes
  bool set = false;  // true: set key=value; false: remove the key
};

// In node order. REQUIRES: nodes.size() == decisions.size().
std::vector<LabelChange> PlanChanges(const std::vector<PlanNode>& nodes,
                                     const std::vector<NodeDecision>& decisions);

}  // namespace ds
