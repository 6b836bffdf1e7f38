// What is already moving off a node counts as gone. An evicted pod keeps running (and using CPU
// and memory) until its grace period ends, and once it is gone a rule whose query averages over a
// window (`rate(...[5m])`, a recording rule, a pushed 60 s mean) still shows its usage until that
// window has passed. A relief plan made from the node's value alone would evict again for the
// same heat: it takes the usage of every pod evicted from the node that is still listed, or gone
// less than the rule's settle time ago, off the node's load first. Pure: values in, values out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rebalance/node_relief.h"

namespace ds {

// One pod evicted from `node` (or whose eviction may have happened: an answer that never came).
struct LeavingPod {
  std::string node;
  std::string pod;  // namespace/name
  std::string uid;
  // Its usage as counted against the node: the resource its eviction relieved as measured then
  // (cores, working-set bytes), the other one its request (nothing better is known of it).
  double cpu = 0, memory = 0;
  double evicted_wall = 0;
  double gone_wall = 0;  // when it was first seen gone; 0: still listed (terminating)
};

// The longest lag the query's text shows, in seconds: its longest range selector (`[5m]`; a
// subquery's range `[1h:1m]`) plus its longest `offset`; 0 when it has neither.
double QueryLagSeconds(std::string_view query);

// How long after a pod is gone the rule's value may still show it: the query's lag plus one
// evaluation interval, the sample that first leaves it out. E.g. 5m10s for `rate(...[5m])` at
// 10 s; one interval for a gauge read as it is. A recording rule hides its window from the query
// that reads it (node:dynamic_scheduler_cpu_usage:percent is a rate over 1m): rebalance.settle
// says it then (deploy/overlays/rebalance/rule.yaml does). Counting a gauge's gone pod for a
// guessed window would hold back relief for that long on every cluster that reads gauges.
double SettleSeconds(std::string_view query, double interval_seconds);

// Is `p` still counted against its node at now_wall? While listed, and for `settle` after it was
// first seen gone.
bool StillLeaving(const LeavingPod& p, double settle_seconds, double now_wall);

// Takes the usage of the pods of `leaving` that are still counted (StillLeaving, those of
// relief->load.node only) off relief->load.load, in the relief's own unit (Relief::Share of the
// relieved resource: cores for cpu, bytes for memory and for bytes available). Returns the amount
// taken off, in that unit (0: nothing is moving). The caller drops the relief when the load is
// then at or below its goal: what is already moving will do.
double DiscountLeaving(Relief* relief, const std::vector<LeavingPod>& leaving,
                       double settle_seconds, double now_wall);

}  // namespace ds
