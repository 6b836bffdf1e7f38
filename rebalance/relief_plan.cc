#include "rebalance/relief_plan.h"

namespace ds {

std::optional<Relief> ReliefGoal(const std::string& node, const std::vector<HoldingRule>& holding,
                                 const std::vector<HeldSince>& held, const RebalanceConfig& cfg,
                                 double now_wall, bool alerted, double allocatable_cpu,
                                 double allocatable_memory) {
  return ReliefFor(node, DueHoldingRules(holding, held, cfg, now_wall, alerted), allocatable_cpu,
                   allocatable_memory, cfg.target);
}

bool RelievedBefore(const Relief& a, const Relief& b) {
  if (a.available_bytes != b.available_bytes) return a.available_bytes;
  const double over_a = a.load.load - a.load.goal, over_b = b.load.load - b.load.goal;
  if (over_a != over_b) return over_a > over_b;
  return a.load.node < b.load.node;
}

PodChoice PlanRelief(const Relief& relief, const std::vector<UsedPod>& pods, size_t room,
                     Placement* placement, bool in_order_only) {
  std::vector<Candidate> candidates;
  candidates.reserve(pods.size());
  for (const UsedPod& p : pods) candidates.push_back(Candidate{p.pod, relief.Share(p.usage)});
  return ChoosePods(relief.load, std::move(candidates), room, placement,
                    UsageCeiling{relief.resource, relief.per_unit, relief.CeilingPercent(),
                                 in_order_only, relief.pool.get(), relief.available_bytes});
}

}  // namespace ds
