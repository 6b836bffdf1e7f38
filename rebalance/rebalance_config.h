// The `rebalance:` section of rule.yaml as the rebalancer reads it (parsed and validated with the
// rest of the file, config/rule_config_rebalance.cc). The schema -- each key, its default, the
// values it accepts -- is docs/reference.md ("`rebalance:`: the rebalancer" and
// "`rebalance.underused`: the mirror mode"), the one place it is written for users; the comments
// here say what a field means to the code: its unit, its sentinel values, and why it exists.
// Times are seconds, loads and bounds percent of a node's allocatable.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include "rebalance/evictable.h"
#include "rebalance/eviction_budget.h"

namespace ds {

// The mirror mode, HighNodeUtilization on real usage: a node whose load stays below every given
// bound for `for` is marked with our key and a value of its own, so the affinity term keeps new
// pods off it too, and drained within the same limits, so a cluster autoscaler can remove it.
// The two modes cannot meet on a node: our key holds one value at a time, a hot node's load is
// above every bound (the bounds must be below the fixed clear thresholds) or, by a relative rule,
// it is not eligible (the cycle calls it hot), the labeller's mark replaces this one on a node
// that turns hot, and balance's destinations are not marked (underuse.h).
struct UnderusedConfig {
  bool enabled = false;  // the section is present
  // [0] cpu, [1] memory: the bound, in percent of allocatable in use, that a node's value of a
  // percent rule with that resource must stay under (ClassifyUnderuse); NaN: not a condition.
  double below[2] = {std::nan(""), std::nan("")};
  // How long a node must stay under every bound before it is marked: consolidation is for nodes
  // whose use stays low, not for a lull between bursts (an unknown load restarts the wait).
  double for_seconds = 3600;
  std::string value = "underused";  // the value our label key takes on such a node
  size_t max_nodes = 1;  // nodes being drained at once: many would herd their pods onto the rest
};

inline constexpr size_t kMaxKeptDecisions = 200;

struct RebalanceConfig {
  bool enabled = false;  // the section is present
  // How long a node must have carried our mark before it is relieved, unless a holding rule has
  // a relieveAfter of its own (Rule::relieve_after_seconds) or a firing alert names the node
  // (qualify.h): the mark alone steers new pods away first, which may be relief enough.
  double after_seconds = 120;
  // How long the mark stays after the node's last eviction, so that the replacements are
  // scheduled while it still steers them away (qualify.h).
  double hold_after_eviction_seconds = 300;
  bool dry_run = false;  // plan and report, never evict (also -dry_run)
  // The floor of every plan, in percent of the node's allocatable in use whatever `unit` a rule
  // shows its values in: no pod is chosen whose move would take the node's load below it
  // (pod_choice.h, NodeLoad::floor). For the rules whose value is a percent in use (`resource`,
  // absolute or relative); a bytes-available rule's plan has no floor (node_relief.h). 0: no
  // floor (a percent in use is never below 0).
  double target = 0;
  // PromQL, one series per pod labelled namespace and pod: its CPU use in cores, its memory
  // working set in bytes (pod_usage.h; `$nodes` narrows it to the nodes being relieved).
  std::string cpu_usage_query =
      "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!=\"\"}[5m]))";
  std::string memory_usage_query =
      "sum by (namespace, pod) (container_memory_working_set_bytes{container!=\"\"})";
  std::string node_selector;      // of the managed nodes, those relieved; empty: every one
  std::string time_zone = "UTC";  // the IANA zone the limits' windows are read in
  // An evicted node that falls below its clear threshold within this window counts as relieved;
  // a replacement bound back onto the node it left within it is a bounce-back.
  double effect_window_seconds = 600;
  std::string reference_query;  // empty: the discovery rate is not measured
  // The evictions (with their rule, value, goal and result) kept for /explain and /rebalance,
  // across restarts too: in an annotation of the ledger's Lease (decision_trail.h), at most
  // kMaxKeptDecisions (about 320 bytes each; beside a full ledger, as many of the newest as fit in
  // the Lease: controller/eviction_ledger_store.h kAnnotationBudget).
  size_t keep_decisions = 100;
  // Evict only a pod whose replacement the scheduler will steer off the node it leaves (its
  // node-affinity term, or our taint untolerated: rebalance/steering.h); false: any pod, as
  // before, for clusters that steer by other means.
  bool require_steering = true;
  // After a replacement is seen back on the node its pod left, its workload is not evicted again
  // for this long (0: no pause).
  double bounce_back_pause_seconds = 3600;
  // How long after an evicted pod is gone its usage still counts against its node (its value may
  // still show it: a rate window); negative: from each rule's query (in_motion.h SettleSeconds).
  double settle_seconds = -1;
  // Memory relief moves only the kubelet's next victims, pods over their memory request, and
  // nothing when the next one cannot move (the pod moved is the one the kubelet would kill
  // next); true: any pod, in the kubelet's order, as the plan finds room.
  bool evict_within_requests = false;
  EvictablePolicy pods;
  EvictionLimits limits;
  UnderusedConfig underused;
};

}  // namespace ds
