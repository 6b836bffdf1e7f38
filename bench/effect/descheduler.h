// The comparison: descheduler's LowNodeUtilization strategy, which judges nodes by the requests
// of their pods, never by what they really use (kubernetes-sigs/descheduler README,
// "LowNodeUtilization"; its default evictor's other rules do not apply to the simulated pods).
// Written from the strategy's description, not from its code. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/effect/params.h"

namespace effect {

struct DeschedPod {
  double cpu = 0, memory = 0;  // requests, in the node's units
  uint64_t id = 0;
};

struct DeschedNode {
  double cpu = 0, memory = 0, pods = 0;  // allocatable
  std::vector<DeschedPod> pod_requests;  // the pods bound to it, in eviction order
};

// One run: a node is underutilized when every resource's requests are below `thresholds` (% of
// allocatable), overutilized when any is above `targetThresholds`. With no node on either side,
// nothing happens. Otherwise pods are evicted from the overutilized nodes, the fullest first,
// while the node stays over a target threshold and the underutilized nodes still have room up to
// their target thresholds for every resource. Returns the ids of the pods to evict, in order.
std::vector<uint64_t> LowNodeUtilization(const std::vector<DeschedNode>& nodes,
                                         const DeschedulerParams& p);

}  // namespace effect
