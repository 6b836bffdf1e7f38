// Which pods of a node may move, and where their replacements may go: the part of a relief (and
// of a drain) between the cycle's reads and the plan. The reads for the pods come first
// (ClusterReads::ReadConstraints, for every pod that rebalance/evictable.h lets go), then only
// pure checks: a constraint the fit check does not judge, a bounce-back pause, steering
// (rebalance/steering.h) or no fit anywhere, the limits, and the other disruptors. Shared by the
// rebalancer (hot nodes) and the drainer (underused nodes). Call from the cycle's thread only.
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/log_throttle.h"
#include "controller/cluster_reads.h"
#include "controller/evictor.h"
#include "controller/rebalance_tally.h"
#include "kube/node_object.h"
#include "rebalance/decision.h"
#include "rebalance/node_relief.h"
#include "rebalance/qualify.h"
#include "rules/mark.h"

namespace ds {

// One node of the cycle, as the reconciler saw it.
struct ReliefInput {
  const NodeInfo* node = nullptr;
  bool marked = false;           // our mark is on it in the node cache
  double marked_since_wall = 0;  // the earliest `since` of its ownership record; 0: unknown
  bool cold = false;             // the cycle's verdict: every rule at or below its clear threshold
  bool hot = false;  // the cycle's verdict: a rule holds it (our hot mark is on it or is being set)
  double recorded_eviction_wall = 0;  // the record's lastEviction (an earlier term's), 0: none
  // The node's real load this cycle, percent of allocatable CPU and memory, from the first rule
  // that measures each and has a value for the node (NaN: unknown; with pools, each node's own
  // rule). Replacements are looked for on the least loaded nodes.
  double load[2] = {std::nan(""), std::nan("")};
  std::vector<HoldingRule> holding;  // the rules holding it, with fresh values
  // Memory bytes available and the least to keep (value and clear threshold of the first
  // bytes-available rule with a value for it; NaN: none): a replacement's fit (placement.h).
  double available_memory = std::nan(""), available_floor = std::nan("");
  std::vector<HeldSince> held;  // the holding rules' since and own waits (ReliefDueWall)
  // Balance (rebalance/pool_mean.h): the most its own pool's relative rule lets it carry, percent
  // of allocatable cpu and memory (NaN: none), and whether it is one of the nodes whose room the
  // pool's held nodes need (BalanceDestinations): the mirror mode does not mark those underused.
  double balance_ceiling[2] = {std::nan(""), std::nan("")};
  bool balance_destination = false;
};

// Nothing new is scheduled onto it (a NoSchedule or NoExecute taint: a dedicated pool, NotReady).
bool RefusesNewPods(const NodeInfo& n);

// What the replacements of a node's pods must avoid: our key's value and our taint.
struct Avoid {
  std::string value;             // empty: no label of ours (mark: taint)
  const Taint* taint = nullptr;  // points into the node; null: none
};

// Why pods of a node were left out, besides evictable.h: `limited` only for now (a limit, a
// bounce-back pause, another disruptor), the others for as long as the pod stays as it is.
struct Skipped {
  size_t limited = 0, would_return = 0, constraint = 0, no_fit = 0;
  // Left to another disruptor (rebalance/disruptors.h), by its name; counted in `limited` too.
  std::map<std::string, size_t> disrupted;
};

class Candidates {
 public:
  // Where a replacement may go is judged on this many nodes: the unmarked, schedulable ones with
  // the lowest real load. A pod that fits on none of them is not evicted (the scheduler might have
  // found room elsewhere: erring on the side of not moving it).
  static constexpr size_t kDestinations = 8;
  // A workload is told how to let its pods move (a `would_return` Event) at most this often.
  static constexpr double kAdviceEverySeconds = 3600;

  // All pointers must outlive this.
  Candidates(const RebalanceConfig& cfg, const Mark& mark, ClusterReads* reads, Evictor* evictor,
             const Clock* clock, RebalanceTally* tally);

  // Our key with one of our values (a level of the mark, underused), or our taint.
  bool Ours(const NodeInfo& node) const;
  // A hot node's: the value on it (a level of the mark), and our taint if it carries it.
  Avoid HotMarkOn(const NodeInfo& node) const;
  // Up to kDestinations nodes where replacements may go: without either of our values,
  // schedulable, untainted, with a known load of `resource` (0 cpu, 1 memory percent; 2 memory
  // bytes available, the most available counting as least loaded), the least loaded first; not
  // those in `exclude`.
  std::vector<const ReliefInput*> Destinations(const std::vector<ReliefInput>& nodes, int resource,
                                               const std::set<std::string>& exclude) const;
  static Placement PlacementOn(const std::vector<const ReliefInput*>& dest, Cluster* cluster);

  // The pods of `pods`, on `node`, that may be evicted now: evictable.h; no constraint the fit
  // check does not judge (PodInfo::unjudged); their workload not paused after a bounce-back;
  // their replacement steered off the node (steering.h), with rebalance.requireSteering (a pod
  // that fits on no other node is no_fit then, not would_return: no term would let it move); and
  // no limit forbids them; nobody else is moving them (rebalance/disruptors.h: the node's
  // removal, safe-to-evict "false", an eviction in the background, their workload's rollout or
  // scale-down; a workload or autoscalers that could not be read count as such). Decides on what
  // Read gave only: no I/O but the would_return advice, an Event through the evictor.
  // `decisions` (optional): each pod left out, with the check and reason (rebalance/decision.h).
  std::vector<const PodInfo*> Filter(const std::vector<PodInfo>& pods, const NodeInfo& node,
                                     const Avoid& avoid, double now_wall, const ReliefWrites& io,
                                     const Cluster& cluster, Placement* placement, Skipped* skipped,
                                     std::vector<PodDecision>* decisions = nullptr);
  // The reads Filter decides on, made first (the cycle's reads stage): for every pod of `pods`
  // that rebalance/evictable.h lets go, what decides its fit and its disruptors
  // (ClusterReads::ReadConstraints), into the pods, `cluster` and `placement`.
  // Returns those pods (the ones whose usage the plan may need).
  std::vector<const PodInfo*> Read(std::vector<PodInfo>* pods, double now_wall, Cluster* cluster,
                                   Placement* placement);

  // A replacement came back onto the node its pod left: its workload is left alone until then.
  void Pause(const std::string& workload, double until_wall) { paused_[workload] = until_wall; }
  const std::map<std::string, double>& paused() const { return paused_; }
  // Forgets pauses and advice whose time is over (or "in the future" after a clock step back).
  void EndCycle(double now_wall);

 private:
  // The log line and Warning Event that say what to add to a `would_return` pod's template.
  void AdviseSteering(const PodInfo& pod, const NodeInfo& node, const Avoid& avoid, double now_wall,
                      const ReliefWrites& io);

  // Constant after construction.
  const RebalanceConfig cfg_;
  const Mark mark_;
  std::vector<std::string> our_values_;  // every level's value of mark_, and underused's: Ours()
  ClusterReads* const reads_;
  Evictor* const evictor_;
  const Clock* const clock_;
  RebalanceTally* const tally_;

  // The cycle's thread only.
  std::map<std::string, double> paused_;   // workload -> until when: its replacement came back
  std::map<std::string, double> advised_;  // workload -> when its would_return Event was posted
  LogThrottle throttle_{300};
};

}  // namespace ds
