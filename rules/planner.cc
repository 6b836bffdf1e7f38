#include "rules/planner.h"

namespace ds {

Plan PlanChanges(const std::vector<PlanNode>& nodes, const std::vector<NodeDecision>& decisions,
                 const PlanOptions& options) {
  Plan plan;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string* cur = nodes[i].current_value;
    bool ours = cur != nullptr && *cur == options.label_value;
    LabelChange c{i, false};
    switch (decisions[i].verdict) {
      case Verdict::kHot:
        if (ours) continue;
        c.set = true;
        break;
      case Verdict::kCold:
        if (!ours) continue;  // absent, or someone else's value: not ours to remove
        break;
      case Verdict::kUnknown:
        continue;
    }
    if (options.max_changes != 0 && plan.changes.size() >= options.max_changes) {
      ++plan.deferred;
      continue;
    }
    plan.changes.push_back(c);
  }
  return plan;
}

}  // namespace ds
