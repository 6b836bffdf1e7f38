// How much a marked node must shed, in one unit with its pods' usage. A rule that says which
// resource it measures (`resource: cpu | memory`) gives the node's load as the percent of its
// allocatable in use; a pod's real usage (cores, bytes) becomes its share of that percent.
// A memory rule with operator '<' gives the bytes still available instead (the kubelet's
// memory.available): moving a pod raises it by the pod's working set, and the goal is to get it
// back to at least the clear threshold.
// Of the rules holding the node, a bytes-available one sets the goal (it is the one that
// predicts a kubelet eviction, which kills at once); among percent rules, the one furthest over
// its clear threshold: relieving that one is what lets the mark go. Pure.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/value_format.h"
#include "rebalance/pod_choice.h"
#include "rebalance/pool_mean.h"
#include "rules/rule.h"

namespace ds {

// One rule holding the node, with its last value.
struct HoldingRule {
  std::string_view rule;
  Rule::Resource resource = Rule::Resource::kNone;
  double value = 0;
  // The clear threshold `value` was judged by (a relative rule's: the cycle's mean plus or minus
  // its clear offset, rules/decider.h Hold).
  double clear_threshold = 0;
  bool available_bytes = false;  // Rule::AvailableBytes(): value and threshold are bytes left
  // Rule::relieve_after_seconds: the rule's own wait before it may drive a relief (negative: none
  // of its own, rebalance.after). DueHoldingRules reads it for a rule with no HeldSince yet.
  double relieve_after_seconds = -1;
  // A relative rule's pool (null for an absolute rule): the goal follows the mean (PoolMean).
  std::shared_ptr<const PoolMean> pool = nullptr;
};

struct Relief {
  std::string rule;  // the rule whose clear threshold is the goal
  Rule::Resource resource = Rule::Resource::kNone;
  // The plan's load, which each moved pod lowers by its share: the percent of allocatable in
  // use; for a bytes-available rule the available bytes negated (so the planner, which only
  // lowers loads, raises them), goal the negated clear threshold, and no floor.
  NodeLoad load;
  double per_unit = 0;  // load per core (cpu) or per byte (memory) of pod usage
  bool available_bytes = false;
  // A relative rule's pool: the goal above is the mean plus the clear offset before any move,
  // and moves as pods are planned (MovingMean); null for an absolute rule.
  std::shared_ptr<const PoolMean> pool;
  double Share(double usage) const { return usage * per_unit; }
  // A load or goal of the plan in the rule's own terms (percent in use, or bytes available),
  // for reports, Events and logs; a share of it (a pod's) stays positive.
  double Value(double planned) const { return available_bytes ? -planned : planned; }
  ValueUnit unit() const { return available_bytes ? ValueUnit::kBytes : ValueUnit::kPercent; }
  // The real-usage ceiling of a destination in percent (UsageCeiling): the clear threshold of a
  // percent rule (a relative one's: the mean plus the threshold offset, MovingMean); none for
  // bytes (the destination's own available bytes judge, placement.h).
  double CeilingPercent() const;
};

// The relief for a node held by `holding`, with its allocatable cores and bytes, never planned
// below `target` percent (percent rules only); nullopt when no holding rule measures a resource
// the node reports (allocatable 0 or unknown; a bytes-available rule needs none) or every such
// rule is already past its clear threshold. A relative rule's goal is its pool's mean plus the
// clear offset (HoldingRule::clear_threshold, as the cycle judged it).
std::optional<Relief> ReliefFor(const std::string& node, const std::vector<HoldingRule>& holding,
                                double allocatable_cpu, double allocatable_memory, double target);

}  // namespace ds
