// One hot node's relief, the rebalancer's qualify -> goal -> choice steps as one pure plan, so that
// the controller (controller/rebalancer.cc) and the replay's estimate (replay/rebalance_estimate.h)
// decide alike: which holding rules have waited their own time (DueHoldingRules) and so may set
// the goal (ReliefFor: a bytes-available memory rule first), and which pods go (ChoosePods: by
// usage share for CPU, the kubelet's order for memory, each only where its replacement fits).
// Split in two because the controller asks Prometheus for the pods' usage of the goal's resource
// between the steps. Values in, plan out, no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "rebalance/node_relief.h"
#include "rebalance/pod_choice.h"
#include "rebalance/qualify.h"
#include "rebalance/rebalance_config.h"

namespace ds {

// The goal for `node` at now_wall: from the holding rules that have waited their own time (all
// of them when `alerted`), with the node's allocatable cores and bytes; nullopt: nothing to
// relieve (cooled, or no rule measures a resource the node reports).
std::optional<Relief> ReliefGoal(const std::string& node, const std::vector<HoldingRule>& holding,
                                 const std::vector<HeldSince>& held, const RebalanceConfig& cfg,
                                 double now_wall, bool alerted, double allocatable_cpu,
                                 double allocatable_memory);

// The order in which the nodes of one cycle are relieved, as far as the cycle's evictions
// (`perCycle`) go: a node short of available bytes first (the kubelet evicts there next, at once,
// without a PodDisruptionBudget), then the furthest over its goal; ties by node name. The
// controller (controller/rebalancer.cc) and the replay's estimate both order by it.
bool RelievedBefore(const Relief& a, const Relief& b);

// A pod that may be evicted, with its real usage of the goal's resource (cores or bytes; for
// memory its whole working set).
struct UsedPod {
  const PodInfo* pod = nullptr;
  double usage = 0;
};

// The evictions for `relief`: at most `room` (what the cycle's budget leaves), each reserving its
// replacement's room in `placement`; a destination must stay below the relieved rule's clear
// threshold by real usage (for bytes: keep its own floor available). `in_order_only` (memory: the
// kubelet's next victims only): stop at the first pod that cannot go. Pure but for `placement`.
PodChoice PlanRelief(const Relief& relief, const std::vector<UsedPod>& pods, size_t room,
                     Placement* placement, bool in_order_only = false);

}  // namespace ds
