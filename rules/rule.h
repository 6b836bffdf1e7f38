// One rule of rule.yaml, as loaded: what it queries and how its value is judged. The file's
// schema and parsing (every section, not only the rules) are config/rule_config.h's.
#pragma once

#include <cstddef>
#include <string>

#include "common/value_format.h"
#include "rules/prediction.h"

namespace ds {

enum class Comparison { kGreater, kLess };

struct Rule {
  std::string name;
  std::string query;
  Comparison op = Comparison::kGreater;
  double threshold = 0;
  // The node leaves pressure once the value is at or past this (<= for '>', >= for '<').
  // Equals threshold when not configured (no hysteresis).
  double clear_threshold = 0;
  double for_seconds = 0;  // the condition must hold this long before the label is set
  std::string node_label;  // series label naming the node; empty: node, instance, ip, nodename
  // What the value measures, for the rebalancer: the percent of the node's allocatable CPU or
  // memory in use (`resource: cpu | memory`), so each pod's real usage can be put in the same
  // unit; or, for memory with operator '<', the bytes still available (AvailableBytes()).
  // kNone: the rule marks nodes but its value cannot be relieved by moving pods.
  enum class Resource { kNone, kCpu, kMemory } resource = Resource::kNone;
  // `unit:` what the value is in, for people (common/value_format.h); a rule with a resource is
  // in percent unless it says otherwise.
  ValueUnit unit = ValueUnit::kNone;
  // `maxAge`: a node's value whose last update is older than this counts as missing data (not
  // as its last value), so a node whose exporter or push.sh died lets go of its hold after the
  // grace. 0: off. The update time is the value of `age_query` per node (e.g. the
  // pushgateway's push_time_seconds), its age measured against the evaluation time Prometheus
  // reports with it; without `age_query`, the sample's own timestamp against this controller's
  // clock.
  double max_age_seconds = 0;
  std::string age_query;  // `ageQuery`; only with maxAge
  // `relativeTo: mean`: threshold and clear_threshold are offsets (>= 0) from the mean of the
  // rule's values over the managed nodes that have one this cycle, in the rule's direction: for
  // '>' a node is over at value > mean + threshold and clears at value <= mean + clear_threshold;
  // for '<' over at value < mean - threshold, clears at value >= mean - clear_threshold
  // (descheduler's useDeviationThresholds, with hysteresis). The node's own value is in the mean.
  enum class Relative { kNone, kMean } relative_to = Relative::kNone;
  // With relativeTo: the fewest nodes with a value for the mean to mean something (`minNodes`,
  // >= 2). With fewer, the rule has no evidence that cycle (as if its query failed).
  size_t min_nodes = 3;
  // Graded marks: how many levels below the hottest this rule marks (0: the hottest, the mark
  // itself). A rule's `levels: {warm: {...}}` loads as one more rule per cooler level, named
  // "<rule>@<level>", with that level's thresholds, so hysteresis, `for`, grace and adoption work
  // per level unchanged; it measures no resource (the rebalancer acts on the hottest level only).
  size_t below_hottest = 0;
  // `predict:` (rules/prediction.h): the rule's value per node is predicted from the daily
  // quantiles of `query` over the last finished days, not read from now.
  PredictConfig predict;
  // `nodeSelector` (the syntax of the top-level one): the rule applies only to the managed nodes
  // whose labels match it, so pools of nodes get their own thresholds; empty: to every managed
  // node. `interval`: the rule is queried at most this often (>= the evaluation interval), its
  // last answer reused in the cycles between; 0: every cycle. Both: rules/rule_scope.h.
  std::string node_selector;
  double interval_seconds = 0;
  // `relieveAfter`: how long this rule's hold must stand before the rebalancer relieves the node
  // (its urgency: a rule near the kubelet's eviction threshold cannot wait as long as a CPU
  // rule); negative: `rebalance.after`. Only on a rule with a resource.
  double relieve_after_seconds = -1;

  // A memory rule whose value is the node's available bytes (the kubelet's memory.available,
  // node_exporter's MemAvailable): hot below the threshold, relieved by raising the value, each
  // pod's working set counting in full.
  bool AvailableBytes() const { return resource == Resource::kMemory && op == Comparison::kLess; }

  // Over the threshold / back at the clear threshold (absolute values: a relative rule's
  // effective ones, rules/decider.h ComputeThresholds).
  bool Over(double threshold_at, double v) const {
    return op == Comparison::kGreater ? v > threshold_at : v < threshold_at;
  }
  bool Cleared(double clear_at, double v) const {
    return op == Comparison::kGreater ? v <= clear_at : v >= clear_at;
  }

  // Every field: a reload keeps the state of a rule only if nothing in it changed.
  bool operator==(const Rule&) const = default;
};

}  // namespace ds
