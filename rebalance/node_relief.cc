#include "rebalance/node_relief.h"

#include <cmath>

namespace ds {

std::optional<Relief> ReliefFor(const std::string& node, const std::vector<HoldingRule>& holding,
                                double allocatable_cpu, double allocatable_memory, double target) {
  std::optional<Relief> best;
  double best_excess = 0;
  for (const HoldingRule& h : holding) {
    double allocatable = 0;
    if (h.resource == Rule::Resource::kCpu) allocatable = allocatable_cpu;
    if (h.resource == Rule::Resource::kMemory) allocatable = allocatable_memory;
    if (!(allocatable > 0) || !std::isfinite(allocatable) || !std::isfinite(h.value)) continue;
    const double excess = h.value - h.clear_threshold;
    if (!(excess > 0) || (best && excess <= best_excess)) continue;
    best_excess = excess;
    Relief r;
    r.rule = std::string(h.rule);
    r.resource = h.resource;
    r.load = NodeLoad{node, h.value, h.clear_threshold, target};
    r.per_unit = 100.0 / allocatable;
    best = std::move(r);
  }
  return best;
}

}  // namespace ds
