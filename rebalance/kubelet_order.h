// The order in which the kubelet evicts pods when its node is short of memory (the
// `memory.available` hard or soft threshold is crossed). The rebalancer moves memory-hot nodes'
// pods in this order, gracefully and through the Eviction API, so that the pod it moves is the one
// the kubelet would kill next; the effect simulation's kubelet kills in it. Pure.
//
// The kubelet's rule, as read in kubernetes/kubernetes pkg/kubelet/eviction/helpers.go (commit
// 008b3652959ca58af8be3fb5b6ecfe9ae7638282): rankMemoryPressure sorts with
// orderedBy(exceedMemoryRequests(stats), priority, memory(stats)):
//   1. exceedMemoryRequests: a pod whose working set exceeds its memory request (strictly, as
//      Cmp == 1) before one that does not;
//   2. priority: lower spec.priority first (no priority is 0);
//   3. memory: larger working set minus request first (it may be negative: a pod under its request
//      with more headroom goes later).
// Pods with no stats go first there; here a pod without a usage figure is never a candidate, so
// that case does not arise. The kubelet's sort.Sort is not stable; callers break the remaining ties
// by name so that a run is reproducible.
#pragma once

#include <cstdint>

namespace ds {

struct KubeletMemoryRank {
  double working_set = 0;  // bytes: the pod's container_memory_working_set_bytes
  double request = 0;      // bytes: its effective memory request (0: none, as BestEffort)
  int32_t priority = 0;    // spec.priority
};

// True when the kubelet under memory pressure evicts `a` before `b`; false for both orders when
// it ranks them equal. A strict weak ordering for finite inputs.
inline bool KubeletEvictsBefore(const KubeletMemoryRank& a, const KubeletMemoryRank& b) {
  const bool a_over = a.working_set > a.request;
  const bool b_over = b.working_set > b.request;
  if (a_over != b_over) return a_over;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.working_set - a.request > b.working_set - b.request;
}

}  // namespace ds
