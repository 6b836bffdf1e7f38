// What the rebalancer's estimate (replay/rebalance_estimate.h) is given, from what the replay
// subcommand read: the listed nodes and pods as destinations, the replay's marks of the hottest
// level, since when each mark's rules held it, and the holding rules' values at the cycles the
// estimate asks about. app/replay.cc does the I/O (LISTs, one instant query per rule and time);
// these turn its answers into the estimate's terms. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/sample.h"
#include "kube/node_object.h"
#include "kube/pod_object.h"
#include "rebalance/node_relief.h"
#include "rebalance/placement.h"
#include "rebalance/qualify.h"
#include "replay/replay_engine.h"
#include "replay/right_sizing.h"
#include "rules/node_matcher.h"
#include "rules/rule.h"

namespace ds {

// Every listed node as a destination: its allocatable, labels, taints and whether it is
// cordoned, with the requests, host ports and residents of the pods bound to it (a pod that has
// finished holds nothing), as the rebalancer reads them from its own LISTs.
std::vector<PlacementNode> PlacementNodesOf(const std::vector<NodeInfo>& nodes,
                                            const std::vector<PodInfo>& pods);

// The marks of the hottest level (below_hottest 0) by node; a mark still on at the end counts to
// r.to. The rebalancer relieves only those: a cooler level's mark says warm, not hot.
NodeMarks HottestMarks(const ReplayResult& r);

// Since when each rule of the hottest level that set `node`'s mark starting at `start` held it,
// with its relieveAfter (the controller's record of the mark, OwnerRule::since_wall): empty when
// no such mark or rule (the estimate then waits rebalance.after). Points into `rules`.
std::vector<HeldSince> HeldAtMark(const ReplayResult& r, const std::vector<Rule>& rules,
                                  const std::string& node, double start);

// The rules holding `node` at `t` as the replay's decider said (ReplayMark::held: a rule in its
// hysteresis band holds only once it crossed its threshold), or null when no mark covers `t`.
// Points into `r`.
const std::vector<std::string>* HoldingAt(const ReplayResult& r, const std::string& node, double t);

// The rules that can hold a node for the rebalancer (a resource, the hottest level), each with
// its value per node at the times asked. A rule whose thresholds are offsets from the mean
// (relativeTo) is not asked: its clear threshold is no value a node can be relieved to without
// the other nodes' values at that time.
class HoldingValues {
 public:
  // `rules` must outlive it.
  explicit HoldingValues(const std::vector<Rule>& rules);

  // The indices of the rules to ask about.
  const std::vector<size_t>& asked() const { return asked_; }

  // Folds rule `rule`'s instant answer at `t` into per-node values: a series is matched to a
  // node as a cycle does (NodeMatcher, the rule's nodeLabel); a node's first finite value counts,
  // series naming no node in `names` are left out. `names[i]` is the matcher's node i.
  void Add(size_t rule, double t, const std::vector<Sample>& samples, const NodeMatcher& matcher,
           const std::vector<std::string>& names);

  // The asked rules holding `node` at `t`: a value known and not yet at its clear threshold
  // (the hold hysteresis keeps), and, with `held` (HoldingAt), among the rules the decider said
  // hold the node then: a rule in its band that never crossed does not, as in the controller.
  // Empty when nothing was asked at `t`. Points into the rules.
  std::vector<HoldingRule> At(const std::string& node, double t,
                              const std::vector<std::string>* held = nullptr) const;

 private:
  const std::vector<Rule>& rules_;
  std::vector<size_t> asked_;
  std::map<std::pair<std::string, double>, std::map<size_t, double>> values_;  // (node, t)
};

}  // namespace ds
