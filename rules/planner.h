// Turns verdicts into label changes. The planner owns the safety knobs: only our key is ever
// touched, a foreign value under our key is never removed, unknown verdicts change nothing,
// and a per-cycle write budget bounds how much one cycle may change.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rules/decider.h"

namespace ds {

struct PlanNode {
  std::string_view name;
  const std::string* current_value = nullptr;  // value under our key, nullptr when absent
};

struct LabelChange {
  size_t node = 0;   // index into the planned nodes
  bool set = false;  // true: set key=value; false: remove the key
};

struct PlanOptions {
  std::string label_value;
  size_t max_changes = 0;  // 0 = unlimited; the rest waits for the next cycle
};

struct Plan {
  std::vector<LabelChange> changes;
  size_t deferred = 0;  // changes over the budget, left for the next cycle
};

// REQUIRES: nodes.size() == decisions.size().
Plan PlanChanges(const std::vector<PlanNode>& nodes, const std::vector<NodeDecision>& decisions,
                 const PlanOptions& options);

}  // namespace ds
