#include "rules/planner.h"

#include <algorithm>

namespace ds {

std::vector<size_t> HoldingRules(const NodeDecision& d) {
  std::vector<size_t> rules;
  for (const Hold& h : d.holds) rules.push_back(h.rule);
  std::sort(rules.begin(), rules.end());
  rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
  return rules;
}

std::vector<LabelChange> PlanChanges(const std::vector<PlanNode>& nodes,
                                     const std::vector<NodeDecision>& decisions) {
  std::vector<LabelChange> changes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PlanNode& n = nodes[i];
    switch (decisions[i].verdict) {
      case Verdict::kHot:
        // Our key with a foreign value on a hot node is set to ours: the node is busy.
        // A marked node at another level than its holds say moves there in one write of the
        // label's (and taint's) value: it is never unmarked on the way.
        if (!n.marked || n.below_hottest != decisions[i].below_hottest)
          changes.push_back(LabelChange{i, ChangeKind::kMark});
        else if (n.recorded == nullptr || *n.recorded != HoldingRules(decisions[i]))
          // Keeps the record true, so that a restart adopts exactly the rules that hold now.
          changes.push_back(LabelChange{i, ChangeKind::kRecord});
        break;
      case Verdict::kCold:
        // Absent, or someone else's value: not ours to remove.
        if (n.marked || n.partly)
          changes.push_back(LabelChange{i, ChangeKind::kUnmark});
        else if (n.has_record)
          changes.push_back(LabelChange{i, ChangeKind::kForget});
        break;
      case Verdict::kUnknown:
        break;
    }
  }
  return changes;
}

}  // namespace ds
