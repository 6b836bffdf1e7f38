// Balance (`relativeTo: mean` rules with a resource): a hot node is one that stands out from its
// pool, and relief brings it back towards the pool's mean. The mean is what the plan must follow:
// each planned move takes load off one node of the pool and puts it on another (or out of the
// pool), so goal and ceiling are judged on the mean after the moves. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rules/rule.h"

namespace ds {

// A relative rule's pool this cycle (`relativeTo: mean`, balance): the values its mean is taken
// over (the managed nodes in the rule's nodeSelector that have one) and its offsets. Relief plans
// the node down to the mean plus the clear offset, and a pod moved within the pool lifts its new
// node by what it takes off the old one, so the goal is judged on the mean after the planned
// moves: the same mean when the nodes are alike, a lower one when a pod leaves the pool.
struct PoolMean {
  double sum = 0;    // of the pool's values, in the rule's own terms (percent, or bytes available)
  size_t count = 0;  // how many (>= the rule's minNodes)
  double clear_offset = 0, threshold_offset = 0;  // the rule's (>= 0, in its operator's direction)
  // Each pool node's value change per core (cpu) or byte (memory) of a pod's usage moved onto it:
  // 100 / allocatable for a percent rule, 1 for bytes available. A node not here is outside the
  // pool: a pod moved there leaves the mean.
  std::map<std::string, double, std::less<>> per_unit;
  // REQUIRES: count > 0.
  double Mean() const { return sum / static_cast<double>(count); }
};

// Balance's destinations in one pool, for the mirror mode (underuse.h): the least loaded nodes
// whose room up to the mean plus the threshold offset is needed to take what the held nodes have
// over the mean plus the clear offset (what relief will move). `values` per node, in the plan's
// units (percent in use, or bytes available negated, with `mean` likewise), NaN for a node not
// in the pool; `held`: the rule holds the node. Returns the positions chosen, least loaded first;
// none when no node is held or nothing is over its goal. Pure.
std::vector<size_t> BalanceDestinations(const std::vector<double>& values,
                                        const std::vector<bool>& held, double mean,
                                        double clear_offset, double threshold_offset);

// The pool of `rule` this cycle, a relative rule with a resource whose mean is `mean` over `count`
// values (rules/decider.h ComputeThresholds); null for any other rule. With `list_nodes`, its
// nodes too: every i with a finite values[i] (a node outside the rule's nodeSelector has none),
// `node(i)` giving its name and its allocatable of the rule's resource (a percent rule skips a
// node with none). The controller (Reconciler::BalancePools) and the effect simulation build
// their pools with it. Pure.
std::shared_ptr<const PoolMean> MakePoolMean(
    const Rule& rule, double mean, size_t count, const std::vector<double>& values,
    const std::function<std::pair<std::string, double>(size_t)>& node, bool list_nodes);

// A relative rule's goal while pods are planned off a node, in the plan's units (Relief::load:
// percent in use, or bytes available negated): the mean of the pool's loads moves with each
// planned pod, and with it the goal (mean plus the clear offset) and the ceiling a destination
// must stay at or below once it takes the pod (mean plus the threshold offset, so a destination
// never turns hot by the same rule and sends the pod back).
class MovingMean {
 public:
  // `pool` must outlive it; `negated`: the plan's loads are bytes available negated.
  MovingMean(const PoolMean* pool, bool negated);
  double Mean() const { return sum_ / static_cast<double>(pool_->count); }
  double Goal() const { return Mean() + pool_->clear_offset; }
  double Ceiling() const { return Mean() + pool_->threshold_offset; }
  // A pod planned off its node, which it lowers by `share` (plan units), onto `to`, which it
  // raises by `amount` (cores or bytes) times `to`'s per_unit when `to` is in the pool.
  void Move(double share, double amount, const std::string& to);

 private:
  const PoolMean* pool_;
  double sum_;
};

}  // namespace ds
