// The `rebalance:` section of rule.yaml (parsed and validated with the rest of the file in
// rules/rule_config.cc). Absent: the rebalancer is off.
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
#pragma once

#include <string>

#include "rebalance/evictable.h"
#include "rebalance/eviction_budget.h"

namespace ds {

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
  EvictablePolicy pods;
  EvictionLimits limits;
};

}  // namespace ds
