// How much a marked node must shed, in one unit with its pods' usage. A rule that says which
// resource it measures (`resource: cpu | memory`) gives the node's load as the percent of its
// allocatable in use; a pod's real usage (cores, bytes) becomes its share of that percent.
// Of the rules holding the node, the one furthest over its clear threshold sets the goal:
// relieving that one is what lets the mark go. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rebalance/pod_choice.h"
#include "rules/rule.h"

namespace ds {

// One rule holding the node, with its last value.
struct HoldingRule {
  std::string_view rule;
  Rule::Resource resource = Rule::Resource::kNone;
  double value = 0;
  double clear_threshold = 0;
};

struct Relief {
  std::string rule;  // the rule whose clear threshold is the goal
  Rule::Resource resource = Rule::Resource::kNone;
  NodeLoad load;        // in percent of allocatable
  double per_unit = 0;  // load percent per core (cpu) or per byte (memory) of pod usage
  double Share(double usage) const { return usage * per_unit; }
};

// The relief for a node held by `holding`, with its allocatable cores and bytes, never planned
// below `target` percent; nullopt when no holding rule measures a resource the node reports
// (allocatable 0 or unknown) or every such rule is already at or below its clear threshold.
std::optional<Relief> ReliefFor(const std::string& node, const std::vector<HoldingRule>& holding,
                                double allocatable_cpu, double allocatable_memory, double target);

}  // namespace ds
