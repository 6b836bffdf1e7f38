#include "rules/planner.h"

namespace ds {

std::vector<LabelChange> PlanChanges(const std::vector<PlanNode>& nodes,
                                     const std::vector<NodeDecision>& decisions) {
  std::vector<LabelChange> changes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    switch (decisions[i].verdict) {
      case Verdict::kHot:
        // Our key with a foreign value on a hot node is set to ours: the node is busy.
        if (!nodes[i].marked) changes.push_back(LabelChange{i, true});
        break;
      case Verdict::kCold:
        // Absent, or someone else's value: not ours to remove.
        if (nodes[i].marked) changes.push_back(LabelChange{i, false});
        break;
      case Verdict::kUnknown:
        break;
    }
  }
  return changes;
}

}  // namespace ds
