// The `rebalance:` section of rule.yaml (parsed and validated with the rest of the file in
// config/rule_config.cc). Absent: the rebalancer is off.
//
//   rebalance:
//     after: 2m                 # a node qualifies once it has carried our mark this long
//     holdAfterEviction: 5m     # the mark stays this long after its last eviction
//     dryRun: false             # plan and report, never evict
//     target: 40                # never plan a node's load below this (the rule's unit)
//     podUsage:                 # per-pod usage, by namespace and pod (PromQL)
//       cpu: sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!=""}[5m]))
//       memory: sum by (namespace, pod) (container_memory_working_set_bytes{container!=""})
//     minPodAge: 5m
//     evictBarePods: false
//     evictLocalStorage: false
//     priorityThreshold: 2000000000
//     namespaces: {include: [], exclude: [kube-system]}
//     nodeSelector: ""          # only nodes matching it are relieved
//     limits: {perCycle: 2, perHour: 20, perNodePerHour: 3, nodeCooldown: 3m,
//              perNamespacePerHour: 0, perWorkload: 1}
//     windows:                  # evict only inside these (local time in timeZone)
//       - {days: [Mon, Tue, Wed, Thu, Fri], start: "22:00", end: "06:00"}
//     timeZone: UTC
//     effectWindow: 10m         # how long after an eviction its effect is judged
//     referenceQuery: ""        # nodes hot by your own standard (each series names one), for
//                               # the discovery rate; empty: not measured
//     requireSteering: true     # evict only pods whose replacement avoids the mark (steering.h)
//     bounceBackPause: 1h       # a workload whose replacement came back is left alone this long
//     settle: 5m10s             # a gone pod's usage counts this long (default: from each
//                               # rule's query, in_motion.h SettleSeconds)
//     evictWithinRequests: false  # memory relief may move pods within their requests too
//     underused:                # the mirror mode (UnderusedConfig); absent: off
//       cpuBelow: 15            # percent of allocatable CPU (a rule with resource: cpu)
//       memoryBelow: 25         # percent of allocatable memory (resource: memory)
//       for: 1h
//       value: underused        # the mark's value on such nodes (our label key)
//       maxNodes: 1             # nodes being drained at once
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
  bool enabled = false;                            // the section is present
  double below[2] = {std::nan(""), std::nan("")};  // cpu, memory percent; NaN: not a condition
  double for_seconds = 3600;
  std::string value = "underused";
  size_t max_nodes = 1;  // nodes being drained at once: many would herd their pods onto the rest
};

struct RebalanceConfig {
  bool enabled = false;  // the section is present
  double after_seconds = 120;
  double hold_after_eviction_seconds = 300;
  bool dry_run = false;
  double target = 0;  // 0: no floor
  std::string cpu_usage_query =
      "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!=\"\"}[5m]))";
  std::string memory_usage_query =
      "sum by (namespace, pod) (container_memory_working_set_bytes{container!=\"\"})";
  std::string node_selector;  // empty: every managed node
  std::string time_zone = "UTC";
  // An evicted node that falls below its clear threshold within this window counts as relieved;
  // a replacement bound back onto the node it left within it is a bounce-back.
  double effect_window_seconds = 600;
  std::string reference_query;  // empty: the discovery rate is not measured
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
