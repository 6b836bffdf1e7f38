// Which pods to move off one hot node: enough to bring its estimated load down to the goal (the
// rule's clear threshold), never below the floor (`target`), and only pods whose replacement fits
// on another, unmarked node. For CPU the largest real users first (the fewest evictions); for
// memory in the order the kubelet would evict them (kubelet_order.h): pods over their requests
// first, then lower priority, then more above their requests. Load and usage are in one unit
// (e.g. the node's CPU percent and each pod's share of it); the caller converts.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kube/pod_object.h"
#include "rebalance/placement.h"
#include "rebalance/pool_mean.h"

namespace ds {

struct Candidate {
  const PodInfo* pod = nullptr;  // evictable (CheckEvictable) and on the node
  double usage = 0;              // its real usage, in the load's unit
};

// The real-usage test of each candidate's new node (placement.h): the resource relieved, the
// load units per core or byte (Relief::per_unit, to turn a candidate's usage back into cores or
// bytes) and the ceiling in percent of allocatable (the relieved rule's clear threshold).
// The default (resource kNone): requests alone decide. `resource` kMemory with `per_unit` > 0 also
// sets the kubelet's order: usage / per_unit is the pod's working set in bytes, compared with its
// memory request.
struct UsageCeiling {
  Rule::Resource resource = Rule::Resource::kNone;
  double per_unit = 0;
  double ceiling_percent = std::nan("");
  // Stop at the first candidate (in the kubelet's order) that cannot go -- no room elsewhere, or
  // below the floor -- rather than take one after it: the pod moved must be the kubelet's next.
  bool in_order_only = false;
  // A relative rule's pool (pool_mean.h): the goal and the percent ceiling follow its mean as pods
  // are planned, instead of the node's fixed goal and `ceiling_percent`. `negated`: the loads are
  // bytes available negated (the ceiling is then each destination's own floor, placement.h).
  const PoolMean* pool = nullptr;
  bool negated = false;
};

struct NodeLoad {
  std::string node;
  double load = 0;   // estimated now
  double goal = 0;   // stop once the load is at or below this (UsageCeiling::pool: its mean's)
  double floor = 0;  // never plan the load below this
};

struct PodChoice {
  struct Pick {
    const PodInfo* pod = nullptr;
    double usage = 0;
    std::string to;  // where its replacement would fit
  };
  std::vector<Pick> picks;  // in the order to evict
  // Every candidate in the plan's order (the kubelet's for memory, by usage for CPU), and why each
  // one not picked was left: "no_usage", "no_relief", "stands_out", "over_floor", "no_fit",
  // "goal_reached", "no_room" (max_pods) or, with in_order_only, "kubelet_victim_stays" for those
  // after the first that cannot go (rebalance/decision.h names them for /explain).
  std::vector<const PodInfo*> ranked;
  std::vector<std::pair<const PodInfo*, const char*>> left;
  double load_after = 0;  // the estimate once they are gone
  double goal = 0;        // the goal at the end (a relative rule's moves with its mean)
  bool reached = false;   // load_after <= goal
  size_t no_fit = 0;      // candidates skipped: no other node could take them
  size_t over_floor = 0;  // candidates skipped: would take the load below the floor
  // Balance (UsageCeiling::pool): candidates skipped because their share alone is over the
  // threshold offset, so a node near the mean that took them would stand out in its turn.
  size_t stands_out = 0;
};

// At most `max_pods` picks; reserves each pick's room in `placement`. Pure but for `placement`.
PodChoice ChoosePods(const NodeLoad& node, std::vector<Candidate> candidates, size_t max_pods,
                     Placement* placement, const UsageCeiling& ceiling = {});

// Draining an underused node (rebalance.underused): every candidate may go, the largest
// requests first (the hardest to place, while the most room is left), each only where its
// replacement fits. At most `max_pods` picks; `usage` is left 0 (no usage query is needed).
PodChoice ChooseDrain(const std::string& node, const std::vector<const PodInfo*>& candidates,
                      size_t max_pods, Placement* placement);

}  // namespace ds
